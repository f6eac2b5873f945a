"""A minimal synchronous JSON-RPC client for the browser tests (what a program would use)."""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from websockets.sync.client import ClientConnection, connect


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class SyncRpc:
    """``call(method, **params)`` over ``ws://…/rpc`` with the bearer token.

    Notifications that arrive meanwhile are kept in ``notifications``.
    """

    def __init__(self, base_url: str, token: str) -> None:
        url = base_url.replace("http://", "ws://") + "/rpc"
        self._stack = contextlib.ExitStack()
        self._ws: ClientConnection = self._stack.enter_context(
            connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=10)
        )
        self._ids = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = 15.0, **params: Any) -> Any:
        rid = next(self._ids)
        self._ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv(timeout=timeout))
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RpcFailure(msg["error"])
                return msg["result"]
            self.notifications.append(msg)

    def wait_for(self, method: str, timeout: float = 15.0, **match: Any) -> dict[str, Any]:
        """The next notification ``method`` whose data has the ``match`` items."""

        def ok(n: dict[str, Any]) -> bool:
            data = n.get("params", {}).get("data", {})
            return n.get("method") == method and all(data.get(k) == v for k, v in match.items())

        for i, n in enumerate(self.notifications):
            if ok(n):
                return self.notifications.pop(i)
        while True:
            msg: dict[str, Any] = json.loads(self._ws.recv(timeout=timeout))
            if ok(msg):
                return msg
            self.notifications.append(msg)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> SyncRpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def path_events(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The events on the path root → head of a ``session.getTree`` result."""
    by_id = {e["id"]: e for e in tree["events"]}
    out = []
    cur = tree["headEventId"]
    while cur in by_id:
        out.append(by_id[cur])
        cur = by_id[cur]["parentId"]
    return out[::-1]
