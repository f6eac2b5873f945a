"""Logs and files: no secret in any log line, at any level, in any format; everything
the server keeps in its home is user-only whatever the umask.

The end-to-end test runs the real ``tron-server`` as a subprocess with umask 000 at
debug level (JSON lines in the log file, text on stderr) through a whole session:
start, browser login, a refused token in a query string, RPC with the bearer token
and with the cookie, a turn against the scripted LLM, shutdown. At debug level the
WebSocket layer logs every request header, so an unredacted token, cookie or key
would be there.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.server.test_cli import ServerProcess, free_port
from tests.support.scripted_llm import Response, Text, scripted_llm_thread
from tron_server.logging import REDACTED, JsonFormatter, Redactor, TextFormatter
from tron_server.security import COOKIE_NAME

API_KEY = "sk-ant-test-" + "k3y" * 12


def _rpc(ws: object, rid: int, method: str, params: dict[str, object]) -> dict[str, object]:
    ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))  # type: ignore[attr-defined]
    while True:
        msg = json.loads(ws.recv(timeout=60))  # type: ignore[attr-defined]
        if msg.get("id") == rid:
            assert "result" in msg, msg
            result: dict[str, object] = msg["result"]
            return result


def _session(server: ServerProcess, workdir: Path) -> dict[str, str]:
    """Use the server as a user does; the secrets that were used."""
    base = f"http://127.0.0.1:{server.port}"
    url = server.wait_for_line("open in a browser").split()[-1]
    code = url.rsplit("token=", 1)[1]
    token = (server.home / "server-token").read_text().strip()
    with httpx.Client(base_url=base, timeout=60) as http:
        login = http.get(url, follow_redirects=False)
        assert login.status_code == 303
        cookie = login.cookies[COOKIE_NAME]
        assert http.get(url, follow_redirects=False).status_code == 403  # used once
        assert (
            http.get("/login", params={"token": token}, follow_redirects=False).status_code == 303
        )
    ws_url = f"ws://127.0.0.1:{server.port}/rpc"
    with pytest.raises(InvalidStatus):  # a token in a query string is refused (and logged)
        connect(f"{ws_url}?token={token}").close()
    with connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        session = _rpc(ws, 1, "session.create", {"workingDirectory": str(workdir)})
        sid = str(session["id"])
        _rpc(ws, 2, "events.subscribe", {"sessionId": sid})
        _rpc(ws, 3, "agent.message", {"sessionId": sid, "content": f"my key is {API_KEY}"})
        while True:
            msg = json.loads(ws.recv(timeout=60))
            if msg.get("method") == "agent.complete":
                break
    cookie_headers = {"Cookie": f"{COOKIE_NAME}={cookie}", "Origin": base}
    with connect(ws_url, additional_headers=cookie_headers) as ws:
        _rpc(ws, 1, "system.ping", {})
    return {"token": token, "login code": code, "cookie": cookie, "API key": API_KEY}


def _modes(home: Path) -> dict[str, int]:
    return {
        str(p.relative_to(home)): stat.S_IMODE(p.lstat().st_mode) for p in [home, *home.rglob("*")]
    }


def test_a_whole_session_logs_no_secret_and_keeps_its_files_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {**os.environ, "ANTHROPIC_API_KEY": API_KEY}
    with scripted_llm_thread([Response([Text("Noted.")])]) as llm:
        env["TRON_ANTHROPIC_BASE_URL"] = llm.base_url
        old = os.umask(0)
        try:
            server = ServerProcess(
                home, free_port(), "--log-level", "debug", "--log-format", "text", env=env
            )
        finally:
            os.umask(old)
        try:
            secrets = _session(server, workdir)
            # While it runs (the WAL and SHM files exist now): everything is user-only.
            modes = _modes(home)
        finally:
            stderr = server.stop()
        assert len(llm.requests) == 1
    for name in ("database/prod.db-wal", "database/prod.db-shm", "server.json", "server-token",
                 "database/prod.db", "logs/tron-server.log"):  # fmt: skip
        assert name in modes, sorted(modes)
    # User-only: nothing for the group or others (git makes its objects 0400, read-only).
    loose = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode & 0o077 or not mode & (0o700 if (home / name).is_dir() else 0o400)
    }
    assert not loose, loose
    assert stat.S_IMODE((home / "logs" / "tron-server.log").stat().st_mode) == 0o600

    file_lines = "".join(p.read_text() for p in sorted((home / "logs").iterdir()))
    # The logs are really there, at debug level, in both formats ...
    assert " DEBUG " in stderr and "rpc call" in stderr
    records = [json.loads(line) for line in file_lines.splitlines()]
    assert {r["level"] for r in records} >= {"debug", "info"}
    assert any("/login" in r["message"] for r in records)
    assert any("authorization: Bearer" in r["message"] for r in records)  # headers, at debug
    assert any(r["message"].startswith("< TEXT [") for r in records)  # frames: size only
    # ... and not one line holds a secret, or a piece of one.
    for name, secret in secrets.items():
        for piece in {secret[i : i + 12] for i in range(len(secret) - 11)}:
            assert piece not in stderr, f"the {name} is on stderr"
            assert piece not in file_lines, f"the {name} is in the log file"
    assert REDACTED in file_lines


# -- the redactor itself --------------------------------------------------------------


SECRET = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=12)


def _record(message: str, *args: object, **fields: object) -> logging.LogRecord:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, message, args, None)
    record.fields = fields
    return record


@given(secret=SECRET, before=st.text(), after=st.text())
def test_a_known_secret_never_survives_formatting(secret: str, before: str, after: str) -> None:
    redactor = Redactor()
    redactor.add(secret)
    for fmt in (JsonFormatter(redactor=redactor), TextFormatter(redactor=redactor)):
        for record in (
            _record(before + secret + after),
            _record("%s", before + secret + after),
            _record("x", value=before + secret + after),
        ):
            assert secret not in fmt.format(record)


@example(value="tron_session")
@given(value=SECRET)
def test_credential_shaped_text_is_redacted(value: str) -> None:
    redactor = Redactor()
    for text in (
        f"GET /login?token={value} HTTP/1.1",
        f"GET /x?a=1&code={value}",
        f"< Authorization: Bearer {value}",
        f"< Cookie: other=1; tron_session={value}",
        f"x-api-key: {value}",
        f"postgresql://tron:{value}@db.example/tron",
        f"https://generativelanguage.googleapis.com/v1?key={value}",
    ):
        redacted = redactor.redact(text)
        # The value must be gone from where it stood (a value such as "tron_session" may
        # also spell a name the line keeps: count, do not just look for it).
        assert redacted.count(value) == text.count(value) - 1, text


def test_uvicorn_access_lines_drop_the_query_string() -> None:
    from tron_server.logging import _NoQueryString

    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/login?token=abc", "1.1", 303), None,
    )  # fmt: skip
    _NoQueryString().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /login HTTP/1.1" 303'


def test_the_log_file_is_created_user_only_whatever_the_umask(tmp_path: Path) -> None:
    script = (
        "import logging, sys; from pathlib import Path; "
        "from tron_server.logging import configure_logging; "
        "configure_logging('info', log_file=Path(sys.argv[1]) / 'logs' / 'x.log'); "
        "logging.getLogger('tron_server.t').info('hello')"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        check=True, capture_output=True, preexec_fn=lambda: os.umask(0),
    )  # fmt: skip
    assert stat.S_IMODE((tmp_path / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "logs" / "x.log").stat().st_mode) == 0o600


SHARED_WRITER = """
import logging, sys
from pathlib import Path
from tron_server.logging import JsonFormatter, _PrivateRotatingFileHandler

handler = _PrivateRotatingFileHandler(Path(sys.argv[1]), maxBytes=4096, backupCount=200)
handler.setFormatter(JsonFormatter(pid=True))
log = logging.getLogger("tron_server.shared")
log.addHandler(handler)
log.setLevel(logging.INFO)
print("ready", flush=True)
sys.stdin.readline()  # start together
for n in range(int(sys.argv[2])):
    log.info("line %d of a writer sharing the file", n)
handler.close()
"""


def test_processes_sharing_the_log_file_lose_no_line_when_it_rotates(tmp_path: Path) -> None:
    path, lines, writers = tmp_path / "logs" / "shared.log", 600, 3
    path.parent.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SHARED_WRITER, str(path), str(lines)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(writers)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    files = sorted(path.parent.glob("shared.log*"))
    records = [json.loads(line) for p in files if not p.name.endswith(".lock") for line in p.open()]
    # Every line of every writer is there once (about 30 rotations happened meanwhile),
    # and each says which process wrote it.
    written = {(r["pid"], int(r["message"].split()[1])) for r in records}
    assert len(records) == len(written) == lines * writers
    assert {pid for pid, _ in written} == {proc.pid for proc in procs}
    assert len(files) > 20 and all(p.stat().st_size <= 4096 for p in files)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
