"""The tron-server command: help, settings, and refusing a non-loopback host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tron_server.cli import build_parser, login_url, main, settings_from_args


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tron_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_help() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for option in ("--host", "--port", "--database-url", "--home", "--log-level", "--allow-remote"):
        assert option in result.stdout


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_non_loopback_host_refused_without_allow_remote(host: str, tmp_path: Path) -> None:
    assert main(["--host", host, "--home", str(tmp_path)]) == 2
    # Nothing was started or written.
    assert not (tmp_path / "server-token").exists()


def test_refusal_through_the_command(tmp_path: Path) -> None:
    result = run_cli("--host", "0.0.0.0", "--home", str(tmp_path))
    assert result.returncode == 2
    assert "--allow-remote" in result.stderr


def test_options_override_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRON_PORT", "9999")
    monkeypatch.setenv("TRON_LOG_LEVEL", "debug")
    args = build_parser().parse_args(["--port", "9001", "--home", str(tmp_path)])
    settings = settings_from_args(args)
    assert settings.port == 9001 and settings.log_level == "debug" and settings.home == tmp_path
    assert settings.resolved_database_url() == f"sqlite:///{tmp_path}/database/prod.db"
    assert settings.allow_remote is False


def test_login_url() -> None:
    args = build_parser().parse_args(["--port", "8500"])
    assert login_url(settings_from_args(args), "tok") == "http://127.0.0.1:8500/login?token=tok"
