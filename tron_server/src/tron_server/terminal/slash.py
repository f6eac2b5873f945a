"""The client's own ``/`` commands: each a thin wrapper over one protocol method
(``/model`` → ``model.switch``, ``/cost`` → ``session.get`` …) or a view of this
screen (``/help``, ``/tree``, ``/answer``, ``/sessions``, ``/new``, ``/quit``)."""

from __future__ import annotations

from typing import Protocol

from rich.text import Text

from ..client import ConnectionLost, RpcCallError
from . import commands as cmds
from . import sessions
from .diffview import DiffScreen, render_files
from .host import ChatHost
from .questions import Questions
from .rewind import Rewinder
from .screens import InfoScreen, PickScreen


class SlashHost(ChatHost, Protocol):
    """The chat screen, with what only the client's commands need."""

    def quit(self) -> None:
        """Leave ``tron`` (the session stays)."""

    async def start_new(self) -> None:
        """Forget the session shown: the next message starts a new one."""

    def pick_session(self, found: list[dict[str, object]]) -> None:
        """Offer ``found`` (sessions of this folder) to switch to."""


class ClientCommands:
    """Runs the client's commands for the chat screen."""

    def __init__(self, host: SlashHost, questions: Questions, rewinder: Rewinder) -> None:
        self.host = host
        self.questions = questions
        self.rewinder = rewinder

    async def run(self, name: str, args: str) -> None:
        """Run ``/name args``; a refusal or a dropped connection is a toast."""
        try:
            await self._run(name, args)
        except ConnectionLost:
            self.host.say("The connection is down: try again once it is back.", error=True)
        except RpcCallError as exc:
            self.host.say(f"/{name}: {exc.message}", error=True)

    async def _run(self, name: str, args: str) -> None:
        host = self.host
        m = host.model
        if name == "quit":
            host.quit()
        elif name == "help":
            host.open_screen(InfoScreen(self.help_text()))
        elif name == "tree":
            self.rewinder.open_tree()
        elif name == "answer":
            self.questions.show_again()
        elif name == "web":
            result = await host.link.call("system.loginUrl")
            host.say(
                f"Web chat: {result.get('url')}\n(this link logs one browser in, once: "
                "/web makes a new one)"
            )
        elif name == "new":
            await host.start_new()
            host.say("New session: it starts with your next message.")
        elif name == "sessions":
            found = await sessions.folder_sessions(host.link.client, host.cwd)
            if not found:
                host.say("No sessions in this folder yet.")
                return
            host.pick_session(found)
        elif m is None:
            host.say(f"/{name} needs a session: send a message first.")
        elif name == "model":
            if args:
                await self.switch_model(args)
            else:
                listed = await host.link.call("model.list")
                choices = [
                    (str(x["id"]), f"{x['id']}  ({x.get('provider', '')})")
                    for x in listed.get("models") or []
                ]
                host.open_screen(PickScreen("Models", choices), self.picked_model)
        elif name == "compact":
            host.say("Compacting…")
            result = await host.link.call("context.compact", {"sessionId": m.id}, timeout=600)
            host.say(
                f"Compacted: {result.get('tokensBefore')} → {result.get('tokensAfter')} tokens."
            )
            host.status_soon()
        elif name == "context":
            ctx = await host.link.call("context.get", {"sessionId": m.id})
            host.context = ctx
            host.say(
                f"Model {ctx.get('model')} · context window {ctx.get('contextWindow')} tokens · "
                f"in use {ctx.get('usedTokens')} tokens ({ctx.get('percent', 0):.1f}%)"
            )
            host.render_status()
        elif name == "cost":
            session = await host.link.call("session.get", {"sessionId": m.id})
            m.set_session(session, "meta")
            usage = m.usage_totals()
            host.say(
                f"Cost {sessions.money(session.get('cost'))} · session {m.id}\n"
                f"Input {session.get('inputTokens')} · output {session.get('outputTokens')} · "
                f"cache read {session.get('cacheReadTokens')} · "
                f"cache write {session.get('cacheCreationTokens')} tokens\n"
                f"{usage.turns} model calls, {session.get('messageCount')} messages"
            )
        elif name in ("retry", "edit"):
            await self.rewinder.retry(edit=name == "edit")
        elif name == "fork":
            await self.rewinder.fork(m.head_id or m.session.get("headEventId") or "")
        elif name == "diff":
            result = await host.link.call("session.diff", {"sessionId": m.id})
            files = result.get("files") or []
            root = m.session.get("workingDirectory")
            host.open_screen(DiffScreen(f"{len(files)} file(s) changed", render_files(files, root)))

    def help_text(self) -> Text:
        text = Text("Keys\n", style="bold")
        text.append(
            "  Enter send · Ctrl+J, or \\ then Enter: new line · ↑/↓ history\n"
            "  Esc abort the running turn · Ctrl+C twice quit · Ctrl+T session tree\n"
            "  Shift+Tab next permission mode (default → acceptEdits → plan)\n"
            "  Tab completes a /command (the common part first) · ↑/↓ choose in the list\n"
            "  Click or Enter on a tool card: all its output\n\n"
        )
        text.append("Commands\n", style="bold")
        for c in self.host.commands:
            hint = f" {c.argument_hint}" if c.argument_hint else ""
            text.append(f"  /{c.name}{hint}", style="cyan")
            text.append(f"  {c.description}\n")
        return text

    async def picked_model(self, model: str | None) -> None:
        if model:
            await self.run("model", model)

    async def switch_model(self, model: str) -> None:
        host = self.host
        assert host.model is not None
        result = await host.link.call("model.switch", {"sessionId": host.model.id, "model": model})
        host.say(f"Model: {result.get('previousModel')} → {result.get('newModel')}")
        host.status_soon()


def unknown_command(commands: list[cmds.Command], name: str) -> str:
    """What to say about ``/name`` that nothing offers."""
    near = cmds.nearest(commands, name)
    hint = f" Did you mean {', '.join('/' + n for n in near)}?" if near else ""
    return f"Unknown command /{name}.{hint} /help lists them."


__all__ = ["ClientCommands", "SlashHost", "unknown_command"]
