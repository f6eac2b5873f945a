"""A short tour of the store, run by ``tron-db demo``."""

from __future__ import annotations

import tempfile

from .store import EventStore


def run_demo(url: str) -> None:
    with EventStore.open(url) as store:
        workdir = tempfile.gettempdir() + "/tron-demo"
        s = store.create_session(
            working_directory=workdir, model="claude-sonnet-4-5", provider="anthropic",
            title="demo",
        )  # fmt: skip
        print(f"database: {store.url}")
        print(f"session {s.id} (root {s.root_event_id})")
        user = store.append(s.id, "message.user", {"content": "List the files, please.", "turn": 1})
        store.append_many(
            s.id,
            [
                {
                    "type": "message.assistant",
                    "payload": {
                        "content": [
                            {"type": "text", "text": "Listing them."},
                            {"type": "tool_use", "id": "toolu_1", "name": "bash",
                             "input": {"command": "ls"}},
                        ],
                        "turn": 1,
                        "tokenUsage": {"inputTokens": 120, "outputTokens": 30},
                    },
                },
                {"type": "tool.call", "payload": {"toolCallId": "toolu_1", "name": "bash",
                                                  "arguments": {"command": "ls"}, "turn": 1}},
                {"type": "tool.result", "payload": {"toolCallId": "toolu_1",
                                                    "content": "README.md\nsrc", "isError": False}},
                {"type": "message.assistant",
                 "payload": {"content": [{"type": "text", "text": "Two entries: README.md, src."}],
                             "turn": 1}},
            ],
        )  # fmt: skip
        head = store.get_session(s.id).head_event_id
        for e in store.get_ancestors(head):
            print(f"  {e.sequence:>2} depth {e.depth:>2}  {e.type}")
        fork = store.fork(user.id, name="try another way")
        print(f"forked {fork.session.id} at the user message (root {fork.fork_event.id})")
        store.rewind(s.id, user.id)
        print(f"rewound {s.id} to the user message; later events stay searchable:")
        for hit in store.search("README"):
            snippet = hit.snippet.replace("\n", " ")
            print(f"  {hit.type} {hit.event_id}: {snippet}")
        print(f"{len(store.list_sessions())} session(s) in the database")
