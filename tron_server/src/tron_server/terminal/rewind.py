"""Moving in the session's tree: rewind (conversation only, or with the files the
agent changed) and fork, chosen in the tree view (Ctrl+T) or with ``/fork``; and
after a failed turn, ``/retry`` and ``/edit`` (as the web chat's Retry and Edit and
resend): both go back to before the prompt that failed, which stays in the tree.

Rewinding to a message of yours goes to just before it and puts its text in the
input (Claude Code's behaviour): a rewind *to* it would keep it on the path, and
the next prompt would reach the model merged with it."""

from __future__ import annotations

from typing import Any

from ..client import ConnectionLost, RpcCallError
from .capabilities import accepts_param
from .diffview import DiffScreen, file_lines, render_files
from .host import ChatHost
from .model import user_text
from .screens import PickScreen, TreeChoice, TreeScreen


class Rewinder:
    """Rewind and fork for the chat screen."""

    def __init__(self, host: ChatHost) -> None:
        self.host = host
        self._restore_files: bool | None = None

    def forget_server(self) -> None:
        """After a reconnect: the server may be another version now."""
        self._restore_files = None

    def open_tree(self) -> None:
        host = self.host
        if host.model is None:
            host.notify("No session yet: send a message first.")
            return
        host.open_screen(TreeScreen(host.model), self.tree_choice)

    async def tree_choice(self, choice: TreeChoice | None) -> None:
        host = self.host
        if choice is None or host.model is None:
            return
        try:
            if choice.action == "fork":
                await self.fork(choice.event_id)
                return
            if await self.server_restores_files():
                await self.offer(choice.event_id, edit=choice.edit)
                return
            await self.rewind(choice.event_id, edit=choice.edit)
        except ConnectionLost:
            host.say("The connection is down: try again once it is back.", error=True)
        except RpcCallError as exc:
            host.say(f"Could not {choice.action}: {exc.message}", error=True)

    async def fork(self, event_id: str) -> None:
        host = self.host
        result = await host.link.call("session.fork", {"eventId": event_id})
        session = result["session"]
        await host.switch(session)
        host.say(f"Forked: now in {session['id']}.")

    async def retry(self, *, edit: bool) -> None:
        """``/retry`` (the failed prompt sent again) or ``/edit`` (put back in the input)."""
        host = self.host
        m = host.model
        prompt = m.failed_prompt() if m is not None else None
        if m is None or prompt is None or not prompt.get("parentId"):
            host.say("No failed turn to " + ("edit" if edit else "retry") + " here.")
            return
        if m.busy:
            host.say("A turn is running: Esc aborts it first.")
            return
        text = user_text((prompt.get("payload") or {}).get("content")) or ""
        if not await self.rewind(str(prompt["parentId"]), quiet=True):
            return
        if edit:
            host.edit_text(text)
            host.say("Back to before the message that failed: it is in the input to edit.")
        else:
            host.say("Sent again (the failed attempt stays in the tree: Ctrl+T).")
            await host.send(text)

    async def offer(self, event_id: str, *, edit: str | None = None) -> None:
        """Conversation only, or with the files: the files that would go back listed
        first (``session.previewRewind``), their diffs one choice away."""
        host = self.host
        m = host.model
        if m is None:
            return
        title = "Rewind"
        files: list[dict[str, Any]] = []
        if host.caps.has("session.previewRewind"):
            preview = await host.link.call(
                "session.previewRewind", {"sessionId": m.id, "eventId": event_id}
            )
            files = preview.get("files") or []
            root = m.session.get("workingDirectory")
            if files:
                title = f"Rewind · {len(files)} file(s) would go back:\n{file_lines(files, root)}\n"
            else:
                title = "Rewind · no file the agent changed would go back"
        options = [
            ("conversation", "Conversation only (files stay as they are)"),
            ("files", "Conversation and files (files the agent changed go back)"),
        ]
        if files:
            options.append(("diff", "Show what the files would go back to (diffs)"))

        async def picked(how: str | None) -> None:
            if how == "diff":
                body = render_files(files, m.session.get("workingDirectory"))

                async def again(_: Any) -> None:
                    await self.offer(event_id, edit=edit)

                host.open_screen(DiffScreen("What a rewind with files writes", body), again)
            elif how is not None:
                await self.rewind(event_id, restore_files=how == "files", edit=edit)

        host.open_screen(PickScreen(title, options), picked)

    async def server_restores_files(self) -> bool:
        """Whether ``session.rewind`` takes ``restoreFiles`` (asked once per server)."""
        if self._restore_files is None:
            self._restore_files = await accepts_param(
                self.host.link.client, "session.rewind", "restoreFiles", True, {"eventId": "evt_x"}
            )
        return self._restore_files

    async def rewind(
        self,
        event_id: str,
        *,
        restore_files: bool = False,
        force: bool = False,
        edit: str | None = None,
        quiet: bool = False,
    ) -> bool:
        """Move the head to ``event_id``; ``edit``: the text of the message rewound
        past, put back in the input. Whether the rewind was done."""
        host = self.host
        m = host.model
        if m is None:
            return False
        params: dict[str, Any] = {"sessionId": m.id, "eventId": event_id}
        if restore_files:
            params["restoreFiles"] = True
        if force:
            params["force"] = True
        try:
            session = await host.link.call("session.rewind", params)
        except RpcCallError as exc:
            files = exc.data.get("files") or exc.data.get("conflicts")
            if restore_files and not force and exc.category == "conflict" and files:
                listed = "\n".join(
                    f"  {f.get('path', f) if isinstance(f, dict) else f}" for f in files
                )
                options = [("cancel", "Cancel"), ("force", "Restore anyway (overwrite them)")]

                async def decided(what: str | None) -> None:
                    if what == "force":
                        await self.rewind(event_id, restore_files=True, force=True, edit=edit)

                host.open_screen(
                    PickScreen(f"Changed outside the agent since:\n{listed}\n", options), decided
                )
                return False
            host.say(f"Could not rewind: {exc.message}", error=True)
            return False
        except ConnectionLost:
            host.say("The connection is down: try again once it is back.", error=True)
            return False
        m.set_session(session, "rewind")
        host.dirty()
        host.status_soon()
        if quiet:
            return True
        what = "Rewound conversation and files" if restore_files else "Rewound"
        if edit is not None:
            host.edit_text(edit)
            host.say(f"{what} to before your message: it is in the input to edit and send.")
        else:
            host.say(f"{what}: later messages stay in the tree (Ctrl+T; fork from them).")
        return True


__all__ = ["Rewinder"]
