"""Write and Edit on real files: atomicity, modes, CRLF, encodings, refusals."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tools.conftest import Recorder
from tron_server.tools import ToolContext, default_tools
from tron_server.tools.edit import EditRefused, plan_edit

pytestmark = pytest.mark.anyio


async def call(ctx: ToolContext, tool: str, **args: object) -> tuple[str, bool]:
    result = await default_tools().execute(tool, dict(args), ctx)
    assert isinstance(result.content, str)
    return result.content, result.is_error


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if "tron-tmp" in p.name]


async def test_write_creates_parents(ctx: ToolContext, workdir: Path, recorder: Recorder) -> None:
    text, err = await call(ctx, "Write", file_path="a/b/c.txt", content="héllo\n")
    assert not err and text == "Created a/b/c.txt (7 bytes, 1 lines)."
    assert (workdir / "a/b/c.txt").read_bytes() == "héllo\n".encode()
    [payload] = recorder.of("file.write")
    assert payload == {
        "path": str(workdir / "a/b/c.txt"),
        "contentHash": hashlib.sha256("héllo\n".encode()).hexdigest(),
        "bytes": 7,
        "created": True,
        "toolCallId": "toolu_1",
    }
    assert leftovers(workdir) == []


async def test_write_replaces_keeping_mode_and_symlink(ctx: ToolContext, workdir: Path) -> None:
    script = workdir / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    text, err = await call(ctx, "Write", file_path="run.sh", content="#!/bin/sh\necho new\n")
    assert not err and text.startswith("Wrote run.sh")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "#!/bin/sh\necho new\n"
    os.symlink("run.sh", workdir / "link.sh")
    await call(ctx, "Write", file_path="link.sh", content="via link\n")
    assert (workdir / "link.sh").is_symlink()
    assert script.read_text() == "via link\n"
    assert leftovers(workdir) == []


async def test_write_refusals(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "d").mkdir()
    text, err = await call(ctx, "Write", file_path="d", content="x")
    assert err and "is a directory" in text
    (workdir / "file").write_text("x")
    text, err = await call(ctx, "Write", file_path="file/sub.txt", content="x")
    assert err and "not a directory" in text
    ro = workdir / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    immutable = False
    try:
        if os.geteuid() == 0:  # permissions do not apply to root: an immutable folder does
            if shutil.which("chattr") is None:
                pytest.skip("running as root without chattr (e2fsprogs): no immutable folder")
            made = subprocess.run(["chattr", "+i", str(ro)], capture_output=True)
            if made.returncode != 0:
                pytest.skip(f"running as root and chattr +i failed: {made.stderr!r}")
            immutable = True
        text, err = await call(ctx, "Write", file_path="ro/x.txt", content="x")
        assert err and ("Permission denied" in text or "not permitted" in text), text
        assert leftovers(workdir) == []
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro)], capture_output=True)
        ro.chmod(0o700)


async def test_edit_unique_match(ctx: ToolContext, workdir: Path, recorder: Recorder) -> None:
    path = workdir / "m.py"
    before = b"def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    path.write_bytes(before)
    path.chmod(0o640)
    text, err = await call(
        ctx, "Edit", file_path="m.py", old_string="    return 1", new_string="    return 10"
    )
    assert not err
    assert text.startswith("Edited m.py: 1 replacement.")
    assert "     2\t    return 10" in text
    after = path.read_bytes()
    assert after == before.replace(b"return 1\n", b"return 10\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    [payload] = recorder.of("file.edit")
    assert payload["contentHashBefore"] == hashlib.sha256(before).hexdigest()
    assert payload["contentHashAfter"] == hashlib.sha256(after).hexdigest()
    assert payload["replacements"] == 1
    assert leftovers(workdir) == []


async def test_edit_found_twice(ctx: ToolContext, workdir: Path) -> None:
    path = workdir / "t.txt"
    path.write_text("x = 1\ny = 2\nx = 1\n")
    text, err = await call(ctx, "Edit", file_path="t.txt", old_string="x = 1", new_string="x = 3")
    assert err
    assert "found 2 times" in text and "lines 1, 3" in text and "replace_all" in text
    assert path.read_text() == "x = 1\ny = 2\nx = 1\n"
    text, err = await call(
        ctx, "Edit", file_path="t.txt", old_string="x = 1", new_string="x = 3", replace_all=True
    )
    assert not err and "2 replacements" in text
    assert path.read_text() == "x = 3\ny = 2\nx = 3\n"


async def test_edit_not_found_shows_nearest_lines(ctx: ToolContext, workdir: Path) -> None:
    lines = [f"value_{i} = compute({i})" for i in range(1, 60)]
    lines[41] = "    result = process_items(items, verbose=True)"
    (workdir / "big.py").write_text("\n".join(lines) + "\n")
    text, err = await call(
        ctx,
        "Edit",
        file_path="big.py",
        old_string="result = process_item(items, verbose=False)",
        new_string="pass",
    )
    assert err
    assert "old_string was not found in big.py" in text
    assert "    42\t    result = process_items(items, verbose=True)" in text
    # Indentation differs only: said so.
    (workdir / "ind.py").write_text("if x:\n    call()\n")
    text, err = await call(
        ctx, "Edit", file_path="ind.py", old_string="if x:\n  call()", new_string="if y:\n  call()"
    )
    assert err and "matches if whitespace is ignored" in text
    assert "     2\t    call()" in text


async def test_edit_crlf_file_keeps_line_endings(ctx: ToolContext, workdir: Path) -> None:
    path = workdir / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    text, err = await call(
        ctx, "Edit", file_path="win.txt", old_string="one\ntwo\n", new_string="one\n2a\n2b\n"
    )
    assert not err, text
    assert path.read_bytes() == b"one\r\n2a\r\n2b\r\nthree\r\n"
    text, err = await call(ctx, "Edit", file_path="win.txt", old_string="three", new_string="3")
    assert not err
    assert path.read_bytes() == b"one\r\n2a\r\n2b\r\n3\r\n"


async def test_edit_refuses_non_utf8_and_binary(ctx: ToolContext, workdir: Path) -> None:
    latin = "caf\xe9 = 1\n".encode("latin-1")
    (workdir / "l1.txt").write_bytes(latin)
    text, err = await call(ctx, "Edit", file_path="l1.txt", old_string="= 1", new_string="= 2")
    assert err and "not valid UTF-8" in text and "0xe9" in text
    assert (workdir / "l1.txt").read_bytes() == latin
    (workdir / "b.bin").write_bytes(b"abc\x00def")
    text, err = await call(ctx, "Edit", file_path="b.bin", old_string="abc", new_string="x")
    assert err and "binary" in text


async def test_edit_other_refusals(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "f.txt").write_text("abc\n")
    text, err = await call(ctx, "Edit", file_path="f.txt", old_string="abc", new_string="abc")
    assert err and "identical" in text
    text, err = await call(ctx, "Edit", file_path="f.txt", old_string="", new_string="x")
    assert err and "empty" in text
    text, err = await call(ctx, "Edit", file_path="missing.txt", old_string="a", new_string="b")
    assert err and "File not found" in text and "Write" in text
    assert (workdir / "f.txt").read_text() == "abc\n"


async def test_edit_utf8_bom_kept(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    _, err = await call(ctx, "Edit", file_path="bom.txt", old_string="hello", new_string="bye")
    assert not err
    assert (workdir / "bom.txt").read_bytes() == b"\xef\xbb\xbfbye\n"


lines_st = st.lists(st.sampled_from(["a", "b", "ab", "x y", "", "é"]), min_size=1, max_size=8)


@given(lines=lines_st, crlf=st.booleans(), start=st.integers(0, 7), span=st.integers(1, 3))
def test_edit_property_line_endings(lines: list[str], crlf: bool, start: int, span: int) -> None:
    """Replacing a unique run of lines written with \\n keeps every line ending of the file."""
    eol = "\r\n" if crlf else "\n"
    start = min(start, len(lines) - 1)
    lines = [*lines[:start], "UNIQUE", *lines[start:]]
    old = "\n".join(lines[start : start + span])
    content = eol.join(lines) + eol
    try:
        out = plan_edit(content.encode(), old, old + "\nNEW", False, "f")
    except EditRefused as exc:
        assert "found" in str(exc)
        return
    text = out.after.decode()
    if crlf:
        assert "\n" not in text.replace("\r\n", "")
    else:
        assert "\r" not in text
    assert text.replace("\r\n", "\n").count("NEW") == 1
