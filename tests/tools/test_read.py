"""Read on real files: numbering, windows, long lines, binary, encodings, images, huge files."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from pathlib import Path

import pytest

from tests.tools.conftest import Recorder
from tron_server.tools import ToolContext, default_tools
from tron_server.tools.read import MAX_IMAGE_BYTES

pytestmark = pytest.mark.anyio


async def read(ctx: ToolContext, **args: object) -> tuple[str, bool]:
    result = await default_tools().execute("Read", dict(args), ctx)
    assert isinstance(result.content, str)
    return result.content, result.is_error


async def test_numbered_like_cat_n(ctx: ToolContext, workdir: Path, recorder: Recorder) -> None:
    data = b"alpha\n\tbeta\r\ngamma"
    (workdir / "f.txt").write_bytes(data)
    text, err = await read(ctx, file_path="f.txt")
    assert not err
    assert text == "     1\talpha\n     2\t\tbeta\n     3\tgamma"
    [payload] = recorder.of("file.read")
    assert payload["path"] == str(workdir / "f.txt")
    assert payload["contentHash"] == hashlib.sha256(data).hexdigest()
    assert payload["lines"] == 3


async def test_offset_and_limit(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    text, _ = await read(ctx, file_path=str(workdir / "f.txt"), offset=10, limit=3)
    lines = text.split("\n")
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "use offset=13 to read more" in text
    text, err = await read(ctx, file_path="f.txt", offset=500)
    assert not err and "past the end" in text and "100 lines" in text
    text, _ = await read(ctx, file_path="f.txt", offset=99)
    assert text == "    99\tline 99\n   100\tline 100"


async def test_long_lines_are_cut(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "long.txt").write_text("x" * 5000 + "\nshort\n" + "y" * 2000 + "\n")
    text, _ = await read(ctx, file_path="long.txt")
    first, second, third = text.split("\n")[:3]
    assert first == "     1\t" + "x" * 2000 + "… [line truncated: 3000 more characters]"
    assert second == "     2\tshort"
    assert third == "     3\t" + "y" * 2000
    assert "1 long lines were cut" in text


async def test_missing_directory_and_empty(ctx: ToolContext, workdir: Path) -> None:
    text, err = await read(ctx, file_path="nope.txt")
    assert err and text == "File not found: nope.txt"
    (workdir / "d").mkdir()
    text, err = await read(ctx, file_path="d")
    assert err and "is a directory" in text
    (workdir / "empty").write_bytes(b"")
    text, err = await read(ctx, file_path="empty")
    assert not err and "empty file" in text


async def test_binary_file_is_not_dumped(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "a.out").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 10)
    text, err = await read(ctx, file_path="a.out")
    assert err
    assert "binary file" in text and "\x00" not in text and len(text) < 300
    (workdir / "noise.bin").write_bytes(bytes(range(1, 32)) * 100)  # no NUL, still binary
    text, err = await read(ctx, file_path="noise.bin")
    assert err and "binary file" in text


async def test_latin1_text_is_decoded_with_replacement(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "l1.txt").write_bytes("café crème\nnaïve\n".encode("latin-1"))
    text, err = await read(ctx, file_path="l1.txt")
    assert not err
    assert text.startswith("     1\tcaf\ufffd cr\ufffdme\n     2\tna\ufffdve")
    assert "not valid UTF-8" in text


async def test_utf8_and_utf16_bom(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "bom8.txt").write_bytes(b"\xef\xbb\xbfh\xc3\xa9\n")
    text, _ = await read(ctx, file_path="bom8.txt")
    assert text == "     1\thé"
    (workdir / "u16.txt").write_bytes("hé\nwörld\n".encode("utf-16"))
    text, err = await read(ctx, file_path="u16.txt")
    assert not err and text.startswith("     1\thé\n     2\twörld")


def _png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_image_is_returned_as_an_image_part(
    ctx: ToolContext, workdir: Path, recorder: Recorder
) -> None:
    png = _png()
    (workdir / "pixel.png").write_bytes(png)
    result = await default_tools().execute("Read", {"file_path": "pixel.png"}, ctx)
    assert not result.is_error
    assert isinstance(result.content, list)
    text_part, image_part = result.content
    assert text_part["type"] == "text" and "image/png" in text_part["text"]
    assert image_part == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(png).decode(),
        },
    }
    assert recorder.of("file.read")[0]["mediaType"] == "image/png"
    # Magic bytes decide, not the extension.
    (workdir / "photo.txt").write_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 100)
    result = await default_tools().execute("Read", {"file_path": "photo.txt"}, ctx)
    assert (
        isinstance(result.content, list)
        and result.content[1]["source"]["media_type"] == "image/jpeg"
    )
    (workdir / "anim.webp").write_bytes(b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20)
    result = await default_tools().execute("Read", {"file_path": "anim.webp"}, ctx)
    assert (
        isinstance(result.content, list)
        and result.content[1]["source"]["media_type"] == "image/webp"
    )


async def test_oversized_image_is_refused(ctx: ToolContext, workdir: Path) -> None:
    with open(workdir / "big.gif", "wb") as f:
        f.write(b"GIF89a")
        f.truncate(MAX_IMAGE_BYTES + 1)
    text, err = await read(ctx, file_path="big.gif")
    assert err and "above the" in text and "byte limit" in text


async def test_50mb_file_window(ctx: ToolContext, workdir: Path, recorder: Recorder) -> None:
    line = b"0123456789" * 9 + b"abcdefghi\n"  # 100 bytes
    block = line * 10_000
    path = workdir / "huge.log"
    with open(path, "wb") as f:
        for _ in range(50):
            f.write(block)
    assert path.stat().st_size == 50_000_000
    text, err = await read(ctx, file_path="huge.log", offset=499_998, limit=5)
    assert not err
    lines = text.split("\n")
    assert lines[0] == "499998\t" + line.decode().rstrip("\n")
    assert lines[2] == "500000\t" + line.decode().rstrip("\n")
    assert len([x for x in lines if "\t" in x]) == 3  # only 500000 lines exist
    payload = recorder.of("file.read")[-1]
    assert payload["contentHash"] is None  # too big to hash on every read
    assert payload["bytes"] == 50_000_000
    text, _ = await read(ctx, file_path="huge.log")
    assert text.count("\n") >= 2000 and "use offset=2001" in text


async def test_single_gigantic_line_is_streamed(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "min.js").write_bytes(b"a" * 3_000_000 + b"\nend\n")
    text, err = await read(ctx, file_path="min.js")
    assert not err
    assert "[line truncated: 2998000 more characters]" in text
    assert "     2\tend" in text
