"""The README's Python example runs as written (on a temporary database)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README lost its Python example"
    code = blocks[0].replace("sqlite:///path/to/events.db", f"sqlite:///{tmp_path / 'r.db'}")
    namespace: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), namespace)
    store = namespace["store"]
    messages = store.get_messages_at(namespace["u"].id)  # type: ignore[attr-defined]
    assert [m.role for m in messages] == ["user"]
    store.close()  # type: ignore[attr-defined]
