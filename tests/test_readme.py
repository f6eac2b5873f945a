"""The README's examples run as written, and its quick start is what CI runs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README lost its Python example"
    monkeypatch.chdir(tmp_path)  # run as written: its database lands where it says
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    store = namespace["store"]
    messages = store.get_messages_at(namespace["u"].id)  # type: ignore[attr-defined]
    assert [m.role for m in messages] == ["user"]
    assert store.url == f"sqlite:///{tmp_path / 'events.db'}"  # type: ignore[attr-defined]
    store.close()  # type: ignore[attr-defined]


def _quickstart_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_quickstart", ROOT / ".ci" / "check_quickstart.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quick_start_is_what_ci_runs() -> None:
    check = _quickstart_check()
    readme = README.read_text()
    commands = check.quickstart_commands(readme)
    # From a clone; nothing installed into the system's Python (PEP 668).
    assert commands[0].startswith("git clone ") and commands[0].endswith("&& cd tron")
    for command in commands:
        assert "pip install" not in command or ".uv/bin/pip install" in command, command
        assert "--break-system-packages" not in command and "--user" not in command
    server = check.server_command(readme)
    assert "--no-dev" in server and "tron-server" in server  # no development tools
    ci = (ROOT / ".ci" / "run").read_text()
    # CI runs the test command exactly as the README writes it, and checks the server one.
    assert check.test_command(readme) in ci.splitlines()
    assert "python3 .ci/check_quickstart.py\n" in ci
    assert "python3 .ci/check_quickstart.py --python /usr/bin/python3 --pep668" in ci
