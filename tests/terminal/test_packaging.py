"""Textual is the ``terminal`` extra of tron-server: installed without it (a fresh venv,
the three distributions built from this checkout), ``tron`` says in one line which extra
to install, and ``tron -p`` still runs a turn against a real server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TronEnv

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(c) for c in cmd], capture_output=True, text=True, timeout=900, **kw
    )


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv with tron-events, tron-llm and tron-server, without the terminal extra."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    packages = [ROOT / "tron_events", ROOT / "tron_llm", ROOT / "tron_server"]
    uv = shutil.which("uv")
    if uv is not None:  # the same install, much faster than pip under load
        made = run(uv, "venv", "--quiet", "--python", sys.executable, venv)
        assert made.returncode == 0, made.stderr
        done = run(uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", *packages)
    else:
        made = run(sys.executable, "-m", "venv", venv)
        assert made.returncode == 0, made.stderr
        done = run(venv / "bin" / "python", "-m", "pip", "install", "-q", *packages)
    if done.returncode != 0 and "Could not connect" in done.stderr + done.stdout:
        pytest.skip(f"the package index is unreachable: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    yield venv


def test_without_the_extra_there_is_no_textual(bare_venv: Path) -> None:
    probe = run(
        bare_venv / "bin" / "python",
        "-c",
        "import importlib.util as u, tron_server.terminal.cli, tron_server.app\n"
        "print(u.find_spec('textual') is None)\nprint(tron_server.app.__file__)",
    )
    assert probe.returncode == 0, probe.stderr
    missing_textual, where = probe.stdout.splitlines()
    assert missing_textual == "True"
    assert where.startswith(str(bare_venv))  # the installed wheel, not this checkout


def test_tron_says_which_extra_to_install(bare_venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRON_DEBUG"}
    home = tmp_path / "home"
    proc = run(
        bare_venv / "bin" / "tron",
        "--home",
        home,
        "--server",
        "ws://127.0.0.1:9/rpc",
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "pip install 'tron-server[terminal]'" in proc.stderr
    assert not home.exists()  # no server was started for a client that cannot run
    assert run(bare_venv / "bin" / "tron", "--help").returncode == 0


def test_print_mode_runs_without_the_extra(bare_venv: Path, env: TronEnv) -> None:
    project = env.project("bare-print")
    env.llm.add(Response([Text("Printed without Textual.")]))
    proc = run(
        bare_venv / "bin" / "tron",
        "--home",
        env.server.home,
        "--server",
        env.server.ws_url,
        "-p",
        "say it",
        cwd=project,
        stdin=subprocess.DEVNULL,
        env=env.env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Printed without Textual.\n"
