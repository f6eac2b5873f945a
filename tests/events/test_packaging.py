"""`pip install ./tron_events` alone gives a working library and tron-db."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)


def test_pip_install_tron_events_alone(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", venv).returncode == 0
    pip = run(venv / "bin" / "python", "-m", "pip", "install", "-q", ROOT / "tron_events")
    assert pip.returncode == 0, pip.stderr
    db = tmp_path / "db.sqlite"
    up = run(venv / "bin" / "tron-db", "upgrade", "--database-url", db)
    assert up.returncode == 0, up.stderr
    check = run(venv / "bin" / "tron-db", "check", "--database-url", db)
    assert check.returncode == 0 and check.stdout.startswith("ok"), check.stdout + check.stderr
    script = (
        "import tron_events, sys\n"
        "from tron_events import EventStore\n"
        f"s = EventStore.open({str(db)!r})\n"
        "x = s.create_session(working_directory='/w', model='m', provider='p')\n"
        "s.append(x.id, 'message.user', {'content': 'packaged words'})\n"
        "assert [h.session_id for h in s.search('packaged')] == [x.id]\n"
        "assert 'tron_llm' not in sys.modules and 'httpx' not in sys.modules\n"
        "print(tron_events.__file__)\n"
    )
    lib = run(venv / "bin" / "python", "-c", script)
    assert lib.returncode == 0, lib.stderr
    # It runs from the installed wheel (migrations inside it), not from this checkout.
    assert str(venv) in lib.stdout
