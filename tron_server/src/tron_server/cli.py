"""``tron-server``: start the server (uvicorn) on this machine.

    tron-server                       # http://127.0.0.1:8420, SQLite at ~/.tron/database/prod.db
    tron-server --port 9000 --database-url postgresql://localhost/tron

Options override ``TRON_*`` environment variables. A non-loopback ``--host``
is refused unless ``--allow-remote`` is given too: the server runs commands
on this machine for whoever holds the token. The token is written to
``<home>/server-token`` (mode 0600); the login URL for a browser is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .logging import LEVELS, configure_logging
from .security import is_loopback_host
from .settings import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron-server",
        description="Tron's local agent server: JSON-RPC over WebSocket at /rpc, "
        "a web chat at /, health at /health.",
        epilog="Environment: every option also reads TRON_<NAME> (e.g. TRON_PORT, "
        "TRON_DATABASE_URL, TRON_HOME, TRON_ANTHROPIC_BASE_URL).",
    )
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8420)")
    parser.add_argument(
        "--database-url",
        help="sqlite:///path.db or postgresql://… (default: SQLite at HOME/database/prod.db)",
    )
    parser.add_argument("--home", type=Path, help="Tron's home directory (default ~/.tron)")
    parser.add_argument("--log-level", choices=LEVELS, help="log level (default info)")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        default=None,
        help="allow a --host that is not a loopback address (anyone reaching it with the "
        "token can run commands on this machine)",
    )
    parser.add_argument(
        "--allow-bypass-permissions",
        action="store_true",
        default=None,
        help="let sessions use the bypassPermissions mode (nothing asks for approval; deny "
        "rules and guardrails still apply)",
    )
    parser.add_argument(
        "--default-permission-mode",
        choices=("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"),
        help="the permission mode of sessions that set none (default: default, which asks "
        "before anything that is not read-only)",
    )
    parser.add_argument(
        "--ask-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a question or an approval waits for the user (default: until answered)",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the options given."""
    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "host": args.host,
            "port": args.port,
            "database_url": args.database_url,
            "home": args.home,
            "log_level": args.log_level,
            "allow_remote": args.allow_remote,
            "allow_bypass_permissions": args.allow_bypass_permissions,
            "ask_timeout": args.ask_timeout,
            "default_permission_mode": args.default_permission_mode,
        }.items()
        if value is not None
    }
    settings = Settings(**overrides)
    settings.home = settings.home.expanduser()
    return settings


def login_url(settings: Settings, token: str) -> str:
    """The one-time URL that logs a browser in (sets the cookie, then redirects to /)."""
    host = settings.host
    if is_loopback_host(host) or host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}/login?token={token}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGINT/SIGTERM; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        parser.error(str(exc))
    if not 0 < settings.port < 65536:
        parser.error(f"--port must be between 1 and 65535, not {settings.port}")
    if not is_loopback_host(settings.host) and not settings.allow_remote:
        print(
            f"tron-server: refusing to listen on {settings.host!r}: it is not a loopback "
            "address, and the server runs commands on this machine. Use --host 127.0.0.1, "
            "or add --allow-remote if you really mean it.",
            file=sys.stderr,
        )
        return 2

    import uvicorn

    from .app import create_app, uvicorn_options

    configure_logging(settings.log_level)
    app = create_app(settings)
    print(f"tron-server listening on http://{settings.host}:{settings.port}", flush=True)
    print(f"  token file: {settings.token_path}", flush=True)
    print(f"  open in a browser: {login_url(settings, app.state.token)}", flush=True)
    try:
        # On SIGINT/SIGTERM uvicorn shuts down gracefully (the lifespan stops running
        # turns and closes the store), then re-raises the signal: SIGTERM ends the
        # process with that signal's status, SIGINT arrives here as KeyboardInterrupt.
        uvicorn.run(app, **uvicorn_options(settings), log_level=settings.log_level)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
