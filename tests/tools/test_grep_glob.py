"""Grep and Glob on real trees; ripgrep and the Python fallback give the same results."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tron_server.tools import ToolContext, default_tools
from tron_server.tools.grep import Grep, SearchSpec, normalized, python_search, rg_search

pytestmark = pytest.mark.anyio

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")


def make_tree(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


TREE = {
    ".gitignore": "*.log\nbuild/\n!keep.log\n",
    "src/app.py": "import os\n\ndef main():\n    print('hello world')\n    return 0\n",
    "src/util.py": "def helper():\n    return 'Hello'\n",
    "src/sub/.gitignore": "generated.py\n",
    "src/sub/generated.py": "hello generated\n",
    "src/sub/real.py": "# hello from sub\n",
    "debug.log": "hello log\n",
    "keep.log": "hello kept\n",
    "build/out.py": "hello build\n",
    ".hidden/conf.toml": "hello = true\n",
    "README.md": "Say hello.\n",
}


@pytest.fixture
def tree(workdir: Path) -> Path:
    make_tree(workdir, TREE)
    (workdir / ".git").mkdir()
    (workdir / ".git" / "config").write_text("hello git\n")
    return workdir


def engines() -> list[str]:
    return ["python", "rg"] if shutil.which("rg") else ["python"]


async def grep(ctx: ToolContext, engine: str, **args: object) -> str:
    tool = Grep()
    tool.engine = engine  # type: ignore[assignment]
    params = tool.Params.model_validate(args)
    result = await tool.run(params, ctx)
    assert isinstance(result.content, str)
    return result.content


@pytest.mark.parametrize("engine", engines())
async def test_files_with_matches_honours_gitignore(
    ctx: ToolContext, tree: Path, engine: str
) -> None:
    text = await grep(ctx, engine, pattern="hello")
    # Path order (byte order per folder, depth first); hidden files in, ignored ones out.
    assert text == "\n".join(
        [
            "Found 5 files",
            ".hidden/conf.toml",
            "README.md",
            "keep.log",
            "src/app.py",
            "src/sub/real.py",
        ]
    )


@pytest.mark.parametrize("engine", engines())
async def test_content_count_context_and_case(ctx: ToolContext, tree: Path, engine: str) -> None:
    text = await grep(
        ctx, engine, pattern="hello", path="src", output_mode="content", **{"-i": True}
    )
    assert text == (
        "src/app.py:4:    print('hello world')\n"
        "src/sub/real.py:1:# hello from sub\n"
        "src/util.py:2:    return 'Hello'"
    )
    text = await grep(
        ctx, engine, pattern="print", path="src/app.py", output_mode="content", **{"-B": 1, "-A": 1}
    )
    assert text == (
        "src/app.py-3-def main():\nsrc/app.py:4:    print('hello world')\nsrc/app.py-5-    return 0"
    )
    text = await grep(
        ctx, engine, pattern="^def|return", path="src", output_mode="content", **{"-C": 0}
    )
    assert "src/app.py:3:def main():" in text and "src/util.py:2:    return 'Hello'" in text
    text = await grep(ctx, engine, pattern="o", glob="*.py", output_mode="count")
    assert text.split("\n")[1:] == ["src/app.py:2", "src/sub/real.py:1", "src/util.py:1"]
    text = await grep(ctx, engine, pattern="hello", glob="src/**/*.py")
    assert text.split("\n")[1:] == ["src/app.py", "src/sub/real.py"]
    text = await grep(ctx, engine, pattern="nothing-like-this")
    assert text == "No matches found."


@pytest.mark.parametrize("engine", engines())
async def test_head_limit_and_explicit_ignored_folder(
    ctx: ToolContext, tree: Path, engine: str
) -> None:
    text = await grep(ctx, engine, pattern="hello", head_limit=2)
    assert text.split("\n")[1:3] == [".hidden/conf.toml", "README.md"]
    assert "[head_limit 2: 3 more not shown]" in text
    # Asking for an ignored folder explicitly searches it.
    text = await grep(ctx, engine, pattern="hello", path="build")
    assert text == "Found 1 file\nbuild/out.py"


async def test_invalid_regex_and_missing_path(ctx: ToolContext, tree: Path) -> None:
    result = await default_tools().execute("Grep", {"pattern": "(unclosed"}, ctx)
    assert result.is_error and "Invalid regular expression" in str(result.content)
    result = await default_tools().execute("Grep", {"pattern": "x", "path": "nope"}, ctx)
    assert result.is_error and "Path not found: nope" in str(result.content)


@needs_rg
async def test_lookaround_falls_back_to_python(ctx: ToolContext, tree: Path) -> None:
    result = await default_tools().execute(
        "Grep", {"pattern": "hello(?= world)", "output_mode": "content"}, ctx
    )
    assert not result.is_error
    assert result.content == "src/app.py:4:    print('hello world')"


async def test_glob_newest_first_and_gitignore(ctx: ToolContext, tree: Path) -> None:
    base = 1_700_000_000
    for i, rel in enumerate(["src/util.py", "src/app.py", "src/sub/real.py"]):
        os.utime(tree / rel, (base + i, base + i))
    result = await default_tools().execute("Glob", {"pattern": "**/*.py"}, ctx)
    assert result.content == "src/sub/real.py\nsrc/app.py\nsrc/util.py"
    result = await default_tools().execute("Glob", {"pattern": "*.py", "path": "src"}, ctx)
    assert result.content == "src/app.py\nsrc/util.py"
    result = await default_tools().execute("Glob", {"pattern": "src/**/*.{py,md}"}, ctx)
    assert result.content == "src/sub/real.py\nsrc/app.py\nsrc/util.py"
    result = await default_tools().execute("Glob", {"pattern": f"{tree}/src/*.py"}, ctx)
    assert result.content == "src/app.py\nsrc/util.py"
    result = await default_tools().execute("Glob", {"pattern": "**/*.log"}, ctx)
    assert result.content == "keep.log"
    result = await default_tools().execute("Glob", {"pattern": "*.nothing"}, ctx)
    assert not result.is_error and "No files match" in str(result.content)


async def test_glob_cap(ctx: ToolContext, workdir: Path) -> None:
    for i in range(1005):
        (workdir / f"f{i:04}.txt").write_text("")
    result = await default_tools().execute("Glob", {"pattern": "*.txt"}, ctx)
    lines = str(result.content).split("\n")
    assert len(lines) == 1001 and lines[-1].startswith("[5 more files not shown")


# --- parity: ripgrep vs Python on generated trees --------------------------------------

NAMES = ["a", "b", "a.txt", "b.log", "c.py", "keep.log", "x.md", ".h"]
DIRS = ["", "d", "d/e", "build", "a", ".cfg"]
RULES = [
    "*.log",
    "!keep.log",
    "build/",
    "/a.txt",
    "d/*.py",
    "e",
    "*.md",
    "!x.md",
    "c.py",
    "d/**/b",
    "a/",
    "#comment",
]
WORDS = ["foo", "bar", "Foo", "baz qux", "foo bar", "x", "", "fo", "123"]
PATTERNS = ["foo", "bar", "fo+", "^foo", "ba[rz]", r"\d+", "qux$", "o b", "F"]


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    for _ in range(draw(st.integers(1, 12))):
        folder = draw(st.sampled_from(DIRS))
        name = draw(st.sampled_from(NAMES))
        rel = f"{folder}/{name}" if folder else name
        if any(rel.startswith(f + "/") or f.startswith(rel + "/") for f in files if f != rel):
            continue
        if rel in DIRS:
            continue
        lines = draw(st.lists(st.sampled_from(WORDS), max_size=6))
        files[rel] = "".join(line + "\n" for line in lines)
    for folder in draw(st.sets(st.sampled_from(["", "d", "a"]), max_size=2)):
        rules = draw(st.lists(st.sampled_from(RULES), max_size=4))
        rel = f"{folder}/.gitignore" if folder else ".gitignore"
        if not any(f.startswith(rel + "/") for f in files):
            files[rel] = "\n".join(rules) + "\n"
    return files


@needs_rg
@settings(max_examples=60, deadline=None)
@given(
    files=trees(),
    pattern=st.sampled_from(PATTERNS),
    mode=st.sampled_from(["files_with_matches", "content", "count"]),
    ignore_case=st.booleans(),
    context=st.integers(0, 2),
    glob=st.sampled_from([None, "*.py", "*.{txt,md}", "d/**", "a*"]),
)
def test_rg_and_python_agree(
    files: dict[str, str],
    pattern: str,
    mode: str,
    ignore_case: bool,
    context: int,
    glob: str | None,
) -> None:
    rg = shutil.which("rg")
    assert rg is not None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_tree(root, files)
        (root / ".git").mkdir()  # stop the parent walk here
        spec = SearchSpec(
            pattern=pattern,
            root=root,
            is_file=False,
            glob=glob,
            mode=mode,  # type: ignore[arg-type]
            before=context,
            after=context,
            ignore_case=ignore_case,
        )

        async def both() -> tuple[object, object]:
            from_rg = await rg_search(spec, rg)
            if glob and "/" in glob:
                from tron_server.tools._walk import glob_matcher

                regex, _ = glob_matcher(glob)
                from_rg = [fh for fh in from_rg if regex.match(fh.path)]
            return normalized(from_rg, spec.mode), normalized(python_search(spec), spec.mode)

        got_rg, got_py = anyio.run(both)
        assert got_rg == got_py, files


async def test_python_fallback_when_rg_is_missing(
    ctx: ToolContext, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tron_server.tools import grep as grep_module

    monkeypatch.setattr(grep_module, "rg_path", lambda: None)
    result = await default_tools().execute(
        "Grep", {"pattern": "hello", "output_mode": "count", "glob": "*.py"}, ctx
    )
    assert result.content == "Found 2 matching lines in 2 files\nsrc/app.py:1\nsrc/sub/real.py:1"


@pytest.mark.parametrize("engine", engines())
async def test_symlinks_out_of_the_tree_are_not_followed(
    ctx: ToolContext, tmp_path: Path, workdir: Path, engine: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("hello secret\n")
    (workdir / "mine.txt").write_text("hello mine\n")
    os.symlink(outside, workdir / "link_dir")
    os.symlink(outside / "secret.txt", workdir / "link_file.txt")
    text = await grep(ctx, engine, pattern="hello")
    assert text == "Found 1 file\nmine.txt"
    result = await default_tools().execute("Glob", {"pattern": "**/*.txt"}, ctx)
    assert result.content == "mine.txt"
