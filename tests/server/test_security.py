"""Local-server security: token, cookie login, Host and Origin allowlists, /health."""

from __future__ import annotations

import os
import stat

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.conftest import RunningServer
from tron_server.security import COOKIE_NAME, is_loopback_host

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


async def test_a_previous_launch_token_is_refused(running_server: RunningServer) -> None:
    old = running_server.token
    running_server.restart()
    assert running_server.token != old
    assert await upgrade_status(running_server, additional_headers=bearer(old)) == 403
    assert (
        await upgrade_status(running_server, additional_headers=bearer(running_server.token)) == 101
    )


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
    assert set(body) == {"status", "version"} and body["status"] == "ok"
    assert running_server.token not in r.text and str(running_server.home) not in r.text


def test_loopback_detection() -> None:
    assert (
        is_loopback_host("127.0.0.1") and is_loopback_host("::1") and is_loopback_host("localhost")
    )
    assert is_loopback_host("127.1.2.3") and is_loopback_host("[::1]")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("192.168.1.5")
    assert not is_loopback_host("example.com")
