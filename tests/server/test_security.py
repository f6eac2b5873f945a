"""Local-server security: token, cookie login, Host and Origin allowlists, /health."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.server import RunningServer
from tron_server.security import (
    COOKIE_NAME,
    is_loopback_host,
    load_or_create_token,
    read_token,
)

pytestmark = pytest.mark.anyio


async def upgrade_status(server: RunningServer, **kwargs: object) -> int:
    """101 if the WebSocket upgrade succeeded (and a ping works), else the HTTP status."""
    url = str(kwargs.pop("url", server.ws_url))
    try:
        async with connect(url, **kwargs) as ws:  # type: ignore[arg-type]
            await ws.send('{"jsonrpc": "2.0", "id": 1, "method": "system.ping"}')
            assert "pong" in await ws.recv()
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_token_file_is_private_and_holds_the_token(running_server: RunningServer) -> None:
    path = running_server.home / "server-token"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text().strip() == running_server.token
    assert len(running_server.token) >= 32


async def test_bearer_token_accepted(running_server: RunningServer) -> None:
    assert (
        await upgrade_status(running_server, additional_headers=bearer(running_server.token)) == 101
    )


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Cookie": f"{COOKIE_NAME}=wrong"},
    ],
)
async def test_missing_or_wrong_credentials_refused(
    running_server: RunningServer, headers: dict[str, str]
) -> None:
    assert await upgrade_status(running_server, additional_headers=headers) == 403


async def test_token_in_query_string_refused_on_rpc(running_server: RunningServer) -> None:
    url = f"{running_server.ws_url}?token={running_server.token}"
    assert await upgrade_status(running_server, url=url) == 403


async def login_cookie(server: RunningServer, code: str) -> str:
    """The ``tron_session`` cookie that ``/login?token=code`` sets (fails if it refuses)."""
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        r = await http.get("/login", params={"token": code})
        assert r.status_code == 303, r.text
        return r.cookies[COOKIE_NAME]


def cookie_headers(value: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE_NAME}={value}"}


async def test_the_token_and_logins_survive_a_restart(running_server: RunningServer) -> None:
    token = running_server.token
    cookie = await login_cookie(running_server, running_server.login_code)
    running_server.restart()
    assert running_server.token == token
    assert (running_server.home / "server-token").read_text().strip() == token
    assert await upgrade_status(running_server, additional_headers=bearer(token)) == 101
    origin = running_server.base_url
    headers = cookie_headers(cookie)
    assert await upgrade_status(running_server, additional_headers=headers, origin=origin) == 101


async def test_rotating_the_token_logs_everyone_out(running_server: RunningServer) -> None:
    old = running_server.token
    cookie = await login_cookie(running_server, running_server.login_code)
    running_server.restart(rotate_token=True)
    assert running_server.token != old
    assert stat.S_IMODE(os.stat(running_server.home / "server-token").st_mode) == 0o600
    assert await upgrade_status(running_server, additional_headers=bearer(old)) == 403
    origin = running_server.base_url
    headers = cookie_headers(cookie)
    assert await upgrade_status(running_server, additional_headers=headers, origin=origin) == 403
    assert (
        await upgrade_status(running_server, additional_headers=bearer(running_server.token)) == 101
    )


async def test_the_printed_login_url_works_once(running_server: RunningServer) -> None:
    code = running_server.login_code
    assert code != running_server.token  # the URL never carries the long-lived token
    cookie = await login_cookie(running_server, code)
    async with httpx.AsyncClient(base_url=running_server.base_url) as http:
        again = await http.get("/login", params={"token": code})
    assert again.status_code == 403 and "set-cookie" not in again.headers
    assert "works once" in again.text
    # The cookie it set keeps working, on any number of connections.
    origin = running_server.base_url
    for _ in range(2):
        status = await upgrade_status(
            running_server, additional_headers=cookie_headers(cookie), origin=origin
        )
        assert status == 101
    # A restart prints a new code; the old one stays spent.
    running_server.restart()
    assert running_server.login_code != code
    async with httpx.AsyncClient(base_url=running_server.base_url) as http:
        assert (await http.get("/login", params={"token": code})).status_code == 403
    assert await login_cookie(running_server, running_server.login_code) == cookie


def test_a_token_file_that_holds_no_token_is_replaced_and_a_loose_one_tightened(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server-token"
    path.write_text("not a token\n")
    token, written = load_or_create_token(path)
    assert written and token != "not a token" and read_token(path) == token
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)
    assert load_or_create_token(path) == (token, False)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again, written = load_or_create_token(path, rotate=True)
    assert written and again != token and read_token(path) == again


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1:1",
        "localhost",
        "attacker.localhost:{port}",
        "0.0.0.0:{port}",
    ],
)
async def test_bad_host_refused_everywhere(running_server: RunningServer, host: str) -> None:
    host = host.format(port=running_server.port)
    # The URL names the bad host (so the Host header does); the socket goes to our server.
    status = await upgrade_status(
        running_server,
        url=f"ws://{host}/rpc",
        host="127.0.0.1",
        port=running_server.port,
        additional_headers=bearer(running_server.token),
    )
    assert status == 403
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{running_server.base_url}/health", headers={"Host": host})
        assert r.status_code == 403
        login = f"{running_server.base_url}/login?token={running_server.token}"
        r = await http.get(login, headers={"Host": host})
        assert r.status_code == 403 and "set-cookie" not in r.headers


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:{port}"]
)
async def test_foreign_origin_refused(running_server: RunningServer, origin: str) -> None:
    origin = origin.format(port=running_server.port)
    assert (
        await upgrade_status(
            running_server, additional_headers=bearer(running_server.token), origin=origin
        )
        == 403
    )
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{running_server.base_url}/health", headers={"Origin": origin})
        assert r.status_code == 403


async def test_a_path_that_is_not_ours_is_not_found_after_the_host_and_origin_checks(
    running_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    server, port = running_server, running_server.port
    auth = bearer(server.token)
    for path in ("/rpcx", "/rpc/x", "/", "/health", "/nope"):
        url = f"ws://127.0.0.1:{port}{path}"
        assert await upgrade_status(server, url=url, additional_headers=auth) == 404, path
    # Host and Origin come first: a refused request learns nothing about paths.
    evil = await upgrade_status(
        server, url=f"ws://evil.example:{port}/rpcx", host="127.0.0.1", port=port
    )
    foreign = await upgrade_status(
        server, url=f"ws://127.0.0.1:{port}/rpcx", origin="http://evil.example"
    )
    assert (evil, foreign) == (403, 403)
    assert await upgrade_status(server) == 403  # /rpc without credentials: still refused
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        assert (await http.get("/nope")).status_code == 404
        assert (await http.get("/nope", headers={"Host": "evil.example"})).status_code == 403
        assert (await http.get("/nope", headers={"Origin": "null"})).status_code == 403
        plain = await http.get("/rpc")  # the endpoint exists, but only as a WebSocket
        assert plain.status_code == 426 and plain.headers["upgrade"] == "websocket"
    # A denied upgrade is no server error (uvicorn would log one: see app.py).
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]"])
async def test_own_origins_and_hosts_allowed(running_server: RunningServer, name: str) -> None:
    own = f"{name}:{running_server.port}"
    status = await upgrade_status(
        running_server,
        url=f"ws://{own}/rpc",
        host="127.0.0.1",
        port=running_server.port,
        additional_headers=bearer(running_server.token),
        origin=f"http://{own}",
    )
    assert status == 101


async def test_cookie_login_flow(running_server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=running_server.base_url) as http:
        r = await http.get("/login", params={"token": "wrong"})
        assert r.status_code == 403 and "set-cookie" not in r.headers
        r = await http.get("/login", params={"token": running_server.token})
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE_NAME}=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        assert running_server.token not in cookie  # the cookie is derived, not the token
        assert r.headers["cache-control"] == "no-store"
        value = r.cookies[COOKIE_NAME]
    headers = {"Cookie": f"{COOKIE_NAME}={value}"}
    origin = running_server.base_url
    assert await upgrade_status(running_server, additional_headers=headers, origin=origin) == 101


async def test_login_only_with_get_and_nothing_else_takes_a_query_token(
    running_server: RunningServer,
) -> None:
    async with httpx.AsyncClient(base_url=running_server.base_url) as http:
        r = await http.post("/login", params={"token": running_server.token})
        assert r.status_code == 405 and "set-cookie" not in r.headers
        r = await http.get("/health", params={"token": running_server.token})
        assert "set-cookie" not in r.headers


async def test_health_has_no_secrets(running_server: RunningServer) -> None:
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{running_server.base_url}/health")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"status", "version", "ready"} and body["status"] == "ok"
    assert body["ready"] is True  # an app given its services serves /rpc once it answers
    assert running_server.token not in r.text and str(running_server.home) not in r.text


def test_loopback_detection() -> None:
    assert (
        is_loopback_host("127.0.0.1") and is_loopback_host("::1") and is_loopback_host("localhost")
    )
    assert is_loopback_host("127.1.2.3") and is_loopback_host("[::1]")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("192.168.1.5")
    assert not is_loopback_host("example.com")


def test_servers_starting_together_on_one_home_share_one_token(tmp_path: Path) -> None:
    """Two processes creating the token at once: both end up with the one in the file."""
    script = (
        "import sys; from pathlib import Path; "
        "from tron_server.security import load_or_create_token; "
        "print(load_or_create_token(Path(sys.argv[1]))[0])"
    )
    path = tmp_path / "home" / "server-token"
    cmd = [sys.executable, "-c", script, str(path)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    tokens = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert tokens == {read_token(path)}
    assert [p.name for p in path.parent.iterdir()] == ["server-token"]  # no temporary left
