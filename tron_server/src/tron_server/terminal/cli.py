"""``tron``: the terminal client of tron-server.

    tron                         # a session in this folder (starts tron-server if none runs)
    tron "fix the failing test"  # the same, with a first message
    tron -c [SESSION]            # continue this folder's most recent session (or SESSION)
    tron -r [ID]                 # pick one of this folder's sessions, or open ID (any folder,
                                 # a unique prefix will do)
    tron --fork EVENT            # a new session continuing from EVENT
    tron -p "prompt"             # print mode: one run, the reply on stdout (no terminal needed)
    tron --trust                 # trust this folder's own configuration first (any mode)
    tron mcp list                # this folder's MCP servers (tron mcp --help)
    tron server status           # the background server: status, stop, restart

Every error is a sentence on stderr and an exit status (see ``--help``); a
traceback is shown only with ``TRON_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import ConnectionLost, RpcCallError, TronClient
from . import sessions
from .attach import ServerAddress, attach, default_home
from .capabilities import Capabilities, accepts_param, load
from .errors import (
    EXIT_NO_SERVER,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_TURN_FAILED,
    EXIT_USAGE,
    TerminalError,
)
from .launch import Prestarted
from .model_check import Choice, check_choice
from .options import build_parser, check_args, version
from .server_commands import main as server_main
from .server_commands import provider_env_warning
from .trust import check_trust, defined_items, notice, trust_folder


@dataclass
class Options:
    """The parsed command line, checked."""

    args: argparse.Namespace
    home: Path
    cwd: Path
    choice: Choice = field(default_factory=lambda: Choice(None, None))
    """``--model`` and ``--provider``, checked against the server (:func:`check_choice`)."""
    prestarted: Prestarted | None = None
    """The server :func:`.launch.prestart` started for this command (``tron -p``)."""

    @property
    def address(self) -> ServerAddress:
        return ServerAddress(self.home, self.args.server)

    @property
    def permission_mode(self) -> str | None:
        if self.args.dangerously_skip_permissions:
            return "bypassPermissions"
        mode: str | None = self.args.permission_mode
        return mode


def _announce(message: str) -> None:
    print(f"tron: {message}", file=sys.stderr, flush=True)


def read_prompt(args: argparse.Namespace) -> str:
    """The print-mode prompt: the argument, else stdin."""
    if args.prompt is not None:
        prompt: str = args.prompt
    elif sys.stdin is None or sys.stdin.isatty():
        raise TerminalError(
            'no prompt: give it after -p (tron -p "…") or pipe it on stdin', EXIT_USAGE
        )
    else:
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise TerminalError("the prompt is empty", EXIT_USAGE)
    return prompt


async def open_session(
    client: TronClient, opts: Options, *, create: bool, first_prompt: str | None = None
) -> dict[str, Any] | None:
    """The session the command line names; a new one (None unless ``create``) otherwise."""
    args = opts.args
    session: dict[str, Any] | None = None
    if args.continue_:
        session = await sessions.get_session(client, args.continue_, opts.cwd)
        sessions.usable(session)
    elif args.continue_ == "":
        session = await sessions.latest_session(client, opts.cwd)
    elif args.resume:
        session = await sessions.get_session(client, args.resume, opts.cwd)
        sessions.usable(session)
    elif args.fork:
        session = await sessions.fork_session(client, args.fork)
    choice = opts.choice
    if session is not None:
        switch: dict[str, Any] = {}
        if choice.model and choice.model != session.get("model"):
            switch["model"] = choice.model
        if choice.provider and choice.provider != session.get("provider"):
            switch["provider"] = choice.provider
            switch.setdefault("model", choice.model or session.get("model"))
        if switch:
            await client.call("model.switch", {"sessionId": session["id"], **switch})
            session = await client.call("session.get", {"sessionId": session["id"]})
        return session
    if not create:
        return None
    params: dict[str, Any] = {"workingDirectory": str(opts.cwd)}
    if choice.model:
        params["model"] = choice.model
    if choice.provider:
        params["provider"] = choice.provider
    title = sessions.title_of(first_prompt)
    if title:
        params["title"] = title
    created: dict[str, Any] = await client.call("session.create", params)
    return created


async def set_mode(client: TronClient, caps: Capabilities, session_id: str, mode: str) -> None:
    method = caps.mode_method
    assert method is not None
    await client.call(method, {"sessionId": session_id, "mode": mode})


def check_mode_supported(caps: Capabilities, mode: str | None) -> None:
    if mode is not None and caps.mode_method is None:
        raise TerminalError(
            f"this tron-server has no permission modes (it offers no method to set one), so "
            f"the mode {mode!r} cannot be applied: drop the flag, or update tron-server.",
            EXIT_USAGE,
        )


async def check_mode_available(client: TronClient, caps: Capabilities, mode: str | None) -> None:
    """Refuse, before any session is made, a mode the server lists as unavailable (or
    does not list at all)."""
    if mode is None or caps.mode_list_method is None:
        return
    listed = await client.call(caps.mode_list_method)
    modes = {m.get("id"): m for m in listed.get("modes") or [] if isinstance(m, dict)}
    if mode not in modes:
        known = ", ".join(str(m) for m in modes)
        raise TerminalError(f"unknown permission mode {mode!r}; this server has {known}.",
                            EXIT_USAGE)  # fmt: skip
    if not modes[mode].get("available", True):
        raise TerminalError(
            f"this tron-server does not allow the {mode} mode: start it with "
            "--allow-bypass-permissions (TRON_ALLOW_BYPASS_PERMISSIONS=1) to use it.",
            EXIT_USAGE,
        )


async def print_mode(opts: Options) -> int:
    from .printmode import run_print

    prompt = read_prompt(opts.args)
    conn = await attach(opts.address, start=not opts.args.no_start, announce=_announce,
                        prestarted=opts.prestarted)  # fmt: skip
    warning = provider_env_warning(opts.address, conn)
    if warning:
        _announce(warning)
    try:
        client = conn.client
        # A server this tron started was asked while it started (attach._connect_early).
        caps = Capabilities(conn.info) if conn.info is not None else await load(client)
        check_mode_supported(caps, opts.permission_mode)
        await check_mode_available(client, caps, opts.permission_mode)
        opts.choice = await check_choice(
            client, opts.args.model, opts.args.provider, caps.default_provider
        )
        extra: dict[str, Any] = {}
        if opts.args.max_turns is not None:
            if not await accepts_param(client, "agent.message", "maxTurns", opts.args.max_turns):
                raise TerminalError(
                    "this tron-server does not take a turn limit per message (agent.message has "
                    "no maxTurns): drop --max-turns, or update tron-server.",
                    EXIT_USAGE,
                )
            extra["maxTurns"] = opts.args.max_turns
        if opts.args.trust:
            await trust_folder(client, caps, opts.cwd)
        session = await open_session(client, opts, create=True, first_prompt=prompt)
        assert session is not None
        if session.get("workingDirectoryExists") is False:
            _announce(
                sessions.missing_folder_note(session["id"], session["workingDirectory"])
                + f" `tron -r {session['id']}` offers to continue it in another folder."
            )
        elif elsewhere := sessions.elsewhere(session, opts.cwd):
            _announce(elsewhere)
        # Never trusted implicitly: an untrusted folder's configuration stays inert. A new
        # session's answer already says whether its folder is trusted and what it defines
        # (session.create): trust.get only for the folder's real path, to name it.
        if session.get("trusted") is True or (
            "defines" in session and not defined_items(session["defines"] or {})
        ):
            untrusted = None
        else:
            untrusted = await check_trust(client, caps, str(session["workingDirectory"]))
        if untrusted is not None:
            _announce(notice(untrusted["path"], untrusted["defines"]))
        if opts.permission_mode is not None:
            await set_mode(client, caps, session["id"], opts.permission_mode)
        return await run_print(
            client,
            session,
            prompt,
            output_format=opts.args.output_format or "text",
            extra=extra,
        )
    finally:
        await conn.close()


async def ask_trust(client: TronClient, caps: Capabilities, folder: str, home: Path) -> bool:
    """On opening an untrusted folder that defines configuration, ask whether to trust
    it (and record the answer "trust"); False when the user quit instead."""
    untrusted = await check_trust(client, caps, folder)
    if untrusted is None:
        return True
    from .trust_prompt import TrustPrompt  # Textual: only when there is something to ask

    choice = await TrustPrompt(untrusted["path"], untrusted["defines"], str(home)).run_async()
    if choice is None:
        return False
    if choice:
        await client.call("trust.set", {"path": untrusted["path"], "trusted": True})
    return True


async def ask_folder(
    client: TronClient, caps: Capabilities, session: dict[str, Any], cwd: Path
) -> dict[str, Any] | None:
    """On opening a session whose folder is not on this machine, ask which folder to
    continue in (this one proposed): the session moved there (``session.resume``), the
    session itself (opened as it is), or None (the user quit)."""
    from .folder_prompt import FolderPrompt  # Textual: only when there is something to ask

    choice = await FolderPrompt(session["id"], session["workingDirectory"], str(cwd)).run_async()
    if not choice:
        return None if choice is None else session
    if not caps.has("session.resume"):
        raise TerminalError(
            "this tron-server cannot continue a session in another folder (it has no "
            "session.resume): update tron-server.",
            EXIT_USAGE,
        )
    moved: dict[str, Any] = await client.call(
        "session.resume", {"sessionId": session["id"], "workingDirectory": choice}
    )
    return moved


#: What ``tron`` says when the interactive client's toolkit is not installed.
NO_TEXTUAL = (
    "the interactive client needs Textual, which tron-server installs with its terminal "
    "extra: pip install 'tron-server[terminal]' (tron -p works without it)"
)


def check_textual() -> None:
    """The interactive client runs on Textual, an optional dependency (the ``terminal``
    extra): without it, a sentence saying which extra to install, not a traceback."""
    try:
        import textual  # noqa: F401
    except ImportError:
        raise TerminalError(NO_TEXTUAL, EXIT_USAGE) from None


async def interactive(opts: Options) -> int:
    check_textual()  # before a server is started for a client that cannot run
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise TerminalError(
            'the interactive client needs a terminal: use -p for scripts (tron -p "…")',
            EXIT_USAGE,
        )
    conn = await attach(opts.address, start=not opts.args.no_start, announce=_announce)
    notes = [w for w in [provider_env_warning(opts.address, conn)] if w]
    try:
        caps = await load(conn.client)
        check_mode_supported(caps, opts.permission_mode)
        await check_mode_available(conn.client, caps, opts.permission_mode)
        opts.choice = await check_choice(
            conn.client, opts.args.model, opts.args.provider, caps.default_provider
        )
        if opts.args.trust:
            await trust_folder(conn.client, caps, opts.cwd)
        session = await open_session(conn.client, opts, create=False)
        if session is not None and session.get("workingDirectoryExists") is False:
            moved = await ask_folder(conn.client, caps, session, opts.cwd)
            if moved is None:
                await conn.close()
                return EXIT_OK
            if moved is session:  # opened as it is
                notes.append(
                    sessions.missing_folder_note(session["id"], session["workingDirectory"])
                )
            session = moved
        exists = session is not None and session.get("workingDirectoryExists") is not False
        elsewhere = sessions.elsewhere(session, opts.cwd) if exists and session else None
        if elsewhere:
            notes.append(elsewhere)
        folder = str(session["workingDirectory"]) if session is not None else str(opts.cwd)
        if not await ask_trust(conn.client, caps, folder, opts.home):
            await conn.close()
            return EXIT_OK
        pick: list[dict[str, Any]] | None = None
        if opts.args.resume == "":
            pick = await sessions.folder_sessions(conn.client, opts.cwd)
            if not pick:
                raise TerminalError(
                    f"No sessions in {opts.cwd} yet: run `tron` to start one.", EXIT_NOT_FOUND
                )
    except BaseException:
        await conn.close()
        raise
    from .app import TronApp

    app = TronApp(
        address=opts.address,
        connection=conn,
        capabilities=caps,
        cwd=opts.cwd,
        session=session,
        pick_from=pick,
        first_prompt=opts.args.prompt,
        model=opts.choice.model,
        provider=opts.choice.provider,
        permission_mode=opts.permission_mode,
        notes=notes,
    )
    try:
        await app.run_async()
    finally:
        await app.close_link()
    if app.error is not None:
        raise app.error
    if app.session_id is not None:
        sid = app.session_id
        print(f"Session {sid} · continue it with `tron -c` (or `tron -r {sid}`)")
    return EXIT_OK


def _rpc_error(exc: RpcCallError) -> TerminalError:
    if exc.code == -32000:
        return TerminalError(
            f"{exc.message}: `tron -r` lists this folder's sessions.", EXIT_NOT_FOUND
        )
    if exc.code == -32602:
        fields = ", ".join(
            f"{e.get('field')}: {e.get('message')}"
            for e in exc.data.get("errors") or []
            if isinstance(e, dict)
        )
        return TerminalError(f"the server refused the request: {fields or exc.message}", EXIT_USAGE)
    return TerminalError(f"the server answered: {exc.message}", EXIT_TURN_FAILED)


def main(argv: Sequence[str] | None = None, *, prestarted: Prestarted | None = None) -> int:
    """The ``tron`` command; returns the exit status. ``prestarted``: the server
    :func:`.launch.prestart` started for this command line, before this module loaded."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["server"]:
        return server_main(argv[1:], default_home())
    if argv and argv[0] == "mcp":
        # Only here: it loads tron_server.mcp (~25 ms), which no other command needs.
        from .mcpcli import build_mcp_parser, run_mcp

        mcp_args = build_mcp_parser(version()).parse_args(argv[1:])
        home = (mcp_args.home or default_home()).expanduser()
        return _guarded(lambda: run_mcp(mcp_args, home, _announce))
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    home = (args.home or default_home()).expanduser()
    opts = Options(args=args, home=home, cwd=Path.cwd().resolve(), prestarted=prestarted)
    return _guarded(lambda: print_mode(opts) if args.print else interactive(opts))


def _guarded(work: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``work``; every failure is a sentence on stderr and an exit status."""
    try:
        return asyncio.run(work())
    except KeyboardInterrupt:
        return 130
    except TerminalError as exc:
        print(f"tron: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except RpcCallError as exc:
        error = _rpc_error(exc)
        print(f"tron: {error.message}", file=sys.stderr)
        return error.exit_code
    except ConnectionLost as exc:
        print(
            f"tron: lost the connection to tron-server ({exc}); is it still running?",
            file=sys.stderr,
        )
        return EXIT_NO_SERVER
    except Exception as exc:
        if os.environ.get("TRON_DEBUG"):
            raise
        print(
            f"tron: unexpected error: {type(exc).__name__}: {exc}. Run again with TRON_DEBUG=1 "
            "for the details, and please report it.",
            file=sys.stderr,
        )
        return 70


__all__ = ["build_parser", "main", "open_session"]
