"""``tron``'s command line: the parser and its checks, with nothing else imported, so
that ``tron -p`` can tell from it whether to start a server before it loads the client
(:mod:`.launch`)."""

from __future__ import annotations

import argparse
from pathlib import Path

EPILOG = """\
the background server:
  tron starts tron-server in the background when none answers; it keeps running
  after tron exits (the web chat and the next tron use it).
  tron server status    pid, URL, home, database, version, uptime, a web chat login URL
  tron server stop      stop it · tron server restart: start it again with this
                        shell's environment (new keys or endpoints)
  (a first message that is the word "server": tron -- server)

keys (interactive):
  Enter sends · Ctrl+J, or a trailing \\ then Enter: new line
  Up/Down: input history · Esc: abort the running turn · Ctrl+C twice: quit
  Ctrl+T: the session tree (fork or rewind at any message) · / then Tab: commands

exit status:
  0 ok · 1 the turn failed · 2 bad usage · 3 no server (none answers and none
  could start, or it refused the token) · 4 unknown session or event

folder trust:
  A folder's own configuration (.claude/ and .tron/ settings: hooks, allow rules,
  defaultMode; command files running shell; agents; .mcp.json servers) does nothing
  until you trust the folder. tron asks when it opens an untrusted folder that has
  any; tron -p never trusts by itself (it says so on stderr); --trust trusts the
  folder and its subfolders first. Deny rules always apply. See docs/trust.md.

environment:
  TRON_HOME (default ~/.tron): the server's token and address are read there;
  NO_COLOR: no colours; TRON_DEBUG=1: show tracebacks.

editors:
  tron acp: Tron as an ACP agent for Zed, JetBrains, Neovim, Emacs (tron acp --help)
"""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tron-server")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


class _Version(argparse.Action):
    """``--version``, reading the version only when asked (the package metadata costs the
    start of every ``tron`` otherwise)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"tron {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron",
        description="Tron's terminal client: talk to the coding agent in this folder.\n"
        "It attaches to a running tron-server, or starts one in the background.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", nargs="?", help="a first message (with -p: the prompt)")
    parser.add_argument(
        "-p",
        "--print",
        action="store_true",
        help="print mode: run one prompt, print the reply and exit (the prompt is read "
        "from stdin when not given)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        help="with -p: text (the reply, default), json (one result object) or "
        "stream-json (one JSON object per notification, then the result)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-c", "--continue", dest="continue_", nargs="?", const="", metavar="SESSION",
        help="continue this folder's most recent session; with SESSION (sess_…, or a unique "
        "prefix of one: sess_3f2a), that session, of any folder",
    )  # fmt: skip
    which.add_argument(
        "-r", "--resume", nargs="?", const="", metavar="ID",
        help="open session ID, of any folder: the whole id or a unique prefix of one, "
        "sess_ optional (as tron-db show takes it); without ID, pick one of this folder's",
    )  # fmt: skip
    which.add_argument("--fork", metavar="EVENT", help="start a new session forked at EVENT")
    parser.add_argument(
        "--model",
        help="the model for this session (model.switch for an existing one); refused, with "
        "the nearest names, when no configured provider serves it",
    )
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help="the provider for this session (anthropic, openai, openai-responses, google, "
        "openai-compatible); with --model, a model the catalog does not know is taken as is",
    )
    parser.add_argument(
        "--max-turns", type=int, metavar="N", help="with -p: stop after N model calls"
    )
    parser.add_argument(
        "--permission-mode",
        metavar="MODE",
        help="the session's permission mode (as the server names them, e.g. default, "
        "acceptEdits, plan)",
    )
    parser.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        help="the bypassPermissions mode (the server must allow it)",
    )
    parser.add_argument(
        "--trust",
        action="store_true",
        help="trust this folder (and its subfolders) first: its own hooks, permission "
        "rules, modes, shell in command files, agents and MCP servers act",
    )
    parser.add_argument("--server", metavar="URL", help="ws://HOST:PORT/rpc of the server to use")
    parser.add_argument(
        "--home", type=Path, help="Tron's home: token and server record (default ~/.tron)"
    )
    parser.add_argument(
        "--no-start",
        action="store_true",
        help="do not start tron-server when none answers (fail instead)",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    cont = args.continue_
    if cont and not cont.startswith("sess_"):
        # `tron -c "fix the test"`: a first message, not a session id.
        if args.prompt is not None:
            parser.error(f"-c takes a session id (sess_…), not {cont!r}")
        args.prompt, args.continue_ = cont, ""
    if args.output_format and not args.print:
        parser.error("--output-format needs -p (print mode)")
    if args.max_turns is not None and not args.print:
        parser.error("--max-turns needs -p (print mode)")
    if args.max_turns is not None and args.max_turns < 1:
        parser.error("--max-turns must be at least 1")
    if args.dangerously_skip_permissions and args.permission_mode:
        parser.error("give --permission-mode or --dangerously-skip-permissions, not both")
    if args.print and args.resume == "":
        parser.error("-r needs a session id with -p (there is no list to pick from)")


__all__ = ["EPILOG", "build_parser", "check_args", "version"]
