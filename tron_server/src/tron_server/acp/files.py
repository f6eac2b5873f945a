"""The editor's buffers for Tron's file tools.

When the editor advertises ``fs.readTextFile`` / ``fs.writeTextFile``, ``tron acp``
registers as the file provider of each session it opens (``files.register``, see
``docs/protocol.md``): the server then sends ``files.request`` for every Read, Write and
Edit of the session, which this module answers by asking the editor
(``fs/read_text_file``, ``fs/write_text_file``) and replying with ``files.respond``.
An editor error is passed on as the answer's ``error`` (a read then uses the disk).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from ..client import ConnectionLost, RpcCallError, TronClient

log = logging.getLogger("tron_server.acp")


class EditorFs(Protocol):
    """What this uses of the ACP client (``acp.interfaces.Client``)."""

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any: ...

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> Any: ...


async def serve(tron: TronClient, editor: EditorFs, request: dict[str, Any]) -> None:
    """Answer one ``files.request`` through the editor."""
    request_id = request.get("requestId")
    session_id = str(request.get("sessionId"))
    path = str(request.get("path"))
    answer: dict[str, Any] = {"requestId": request_id}
    try:
        if request.get("op") == "read":
            read = await editor.read_text_file(session_id, path)
            answer["content"] = read.content
        elif request.get("op") == "write":
            await editor.write_text_file(session_id, path, str(request.get("content")))
            answer["content"] = ""
        else:
            answer["error"] = f"unknown file operation {request.get('op')!r}"
    except Exception as exc:  # the editor's answer, whatever went wrong, is the reason
        answer["error"] = str(exc) or type(exc).__name__
        log.info("the editor could not %s %s: %s", request.get("op"), path, answer["error"])
    try:
        await tron.call("files.respond", answer)
    except (RpcCallError, ConnectionLost) as exc:
        log.warning("could not answer a file request: %s", exc)


__all__ = ["EditorFs", "serve"]
