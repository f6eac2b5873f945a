"""``tron server status|stop|restart``: the background tron-server of a home.

``tron`` starts tron-server in the background when none answers, and the server
keeps running after ``tron`` exits (the next ``tron``, the web chat and other
clients use it). These commands show it, stop it, and start it again (with the
environment of the shell they run in: how a new key or endpoint reaches it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..client import ConnectionLost, RpcCallError
from ..provider_env import differences, fingerprint
from ..server_record import ServerRecord, is_tron_server, read_server_record, running_servers
from ..version import server_version
from .attach import Connection, Refused, ServerAddress, Unreachable, attach, connect_once
from .errors import EXIT_NO_SERVER, EXIT_OK, EXIT_TURN_FAILED, TerminalError

#: How long ``stop`` waits for the server to finish its running turns and exit.
STOP_TIMEOUT = 30.0


def build_parser(home_default: Path) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron server",
        description="The tron-server of a home: `tron` starts one in the background when "
        "none answers, and it keeps running after tron exits.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 ok · 1 the server did not stop · 3 no server runs (status)",
    )
    parser.add_argument("--version", action="version", version=f"tron {server_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (
        ("status", "pid, URL, home, database, version, uptime and a web chat login URL"),
        ("stop", "stop it (running turns are recorded as aborted first)"),
        ("restart", "stop it and start it again with this shell's environment"),
    ):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument(
            "--home",
            type=Path,
            default=home_default,
            help=f"Tron's home: token and server record (default {home_default})",
        )
    return parser


def _uptime(started_at: str, now: datetime | None = None) -> str:
    try:
        since = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    seconds = max(0, int(((now or datetime.now(UTC)) - since).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m")) if v]
    return " ".join([*parts, f"{seconds}s"] if not days else parts)


async def login_url(connection: Connection) -> str | None:
    """A new one-time web chat login URL (None: the server has no ``system.loginUrl``)."""
    try:
        result = await connection.client.call("system.loginUrl")
    except RpcCallError:
        return None
    url = result.get("url") if isinstance(result, dict) else None
    return str(url) if url else None


async def status(home: Path) -> int:
    record = read_server_record(home)
    if record is None:
        print(
            f"No tron-server is running for the home {home}. `tron` starts one in the "
            "background (or run `tron-server`).",
            file=sys.stderr,
        )
        return EXIT_NO_SERVER
    lines = [f"tron-server is running (pid {record.pid})"]
    rows: list[tuple[str, str]] = [("url", record.url), ("web chat", record.http_url)]
    info: dict[str, object] = {}
    login: str | None = None
    problem = ""
    try:
        connection = await connect_once(ServerAddress(home), record.url)
    except (Unreachable, Refused) as exc:
        problem = f"it does not answer at {record.url} ({exc})"
    else:
        try:
            info = await connection.client.call("system.info")
            login = await login_url(connection)
        except (ConnectionLost, RpcCallError) as exc:
            problem = f"it answered, then failed ({exc})"
        finally:
            await connection.close()
    if login:
        rows.append(("login", f"{login}  (works once)"))
    rows.append(("home", str(info.get("home") or home)))
    rows.append(("database", record.database or str(info.get("database") or "?")))
    rows.append(("version", str(info.get("version") or record.version or "?")))
    if record.started_at:
        rows.append(("uptime", f"{_uptime(record.started_at)} (since {record.started_at})"))
    lines += [f"  {key + ':':10}{value}" for key, value in rows]
    if problem:
        lines.append(f"  note: {problem}")
    others = [r for r in running_servers(home) if r.pid != record.pid]
    for other in others:
        lines.append(f"  another tron-server serves this home too: pid {other.pid}, {other.url}")
    lines.append("It keeps running after tron exits: `tron server stop` stops it.")
    print("\n".join(lines))
    return EXIT_OK


async def _stop_one(record: ServerRecord) -> bool:
    """SIGTERM, then wait for the process to end (a zombie counts as ended)."""
    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + STOP_TIMEOUT
    while is_tron_server(record.pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def stop(home: Path, *, quiet: bool = False) -> int:
    record = read_server_record(home)
    if record is None or not is_tron_server(record.pid):
        if not quiet:
            print(f"No tron-server was running for the home {home}.")
        return EXIT_OK
    if not await _stop_one(record):
        print(
            f"tron-server (pid {record.pid}) did not stop within {STOP_TIMEOUT:.0f} s; "
            f"`kill -9 {record.pid}` ends it at once (running turns are then not recorded "
            "as aborted).",
            file=sys.stderr,
        )
        return EXIT_TURN_FAILED
    print(f"Stopped tron-server (pid {record.pid}, {record.url}).")
    rest = read_server_record(home)
    if rest is not None:
        print(f"Another tron-server still serves this home: pid {rest.pid}, {rest.url}.")
    return EXIT_OK


async def restart(home: Path) -> int:
    code = await stop(home, quiet=True)
    if code != EXIT_OK:
        return code
    connection = await attach(ServerAddress(home), announce=lambda _: None)
    try:
        record = read_server_record(home)
        pid = f"pid {record.pid}, " if record is not None else ""
        print(f"Started tron-server ({pid}{connection.url}) with this shell's environment.")
    finally:
        await connection.close()
    return EXIT_OK


def provider_env_warning(address: ServerAddress, connection: Connection) -> str | None:
    """What ``tron`` says when the server it attached to was started with another
    provider environment (a key or an endpoint set in this shell that it lacks)."""
    if address.explicit_url or connection.started:
        return None
    record = read_server_record(address.home)
    if record is None or record.url != connection.url or record.provider_env is None:
        return None
    found = differences(fingerprint(os.environ), record.provider_env)
    if not found:
        return None
    return (
        f"the running tron-server (pid {record.pid}) was started with another provider "
        f"environment: {'; '.join(found)}. It keeps the environment it started with: "
        "`tron server restart` restarts it with this shell's."
    )


def main(argv: Sequence[str], home_default: Path) -> int:
    """``tron server ARGV``; returns the exit status."""
    args = build_parser(home_default).parse_args(argv)
    home = args.home.expanduser()
    run = {"status": status, "stop": stop, "restart": restart}[args.command]
    try:
        return asyncio.run(run(home))
    except KeyboardInterrupt:
        return 130
    except TerminalError as exc:
        print(f"tron: {exc.message}", file=sys.stderr)
        return exc.exit_code


__all__ = ["build_parser", "login_url", "main", "provider_env_warning", "status", "stop"]
