"""session.* and model.* over RPC, with the session.* notifications every connection gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.server import RunningServer
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def append(server: RunningServer, session_id: str, type: str, payload: dict[str, Any]) -> Any:
    store = server.services.store
    assert store is not None
    return await server.run(lambda: store.append(session_id, type, payload))


async def test_create_get_list_and_created_notification(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    async with running_server.connect() as other:
        seen = other.notifications(["session.created"])
        session = await client.call(
            "session.create",
            {"workingDirectory": str(tmp_path), "title": "t", "systemPrompt": "be brief"},
        )
        n = await seen.next(timeout=5)
    # The result adds the folder's trust to the Session object the notification carries.
    assert session.pop("trusted") is False and session.pop("defines")["hooks"] == 0
    assert n.session_id == session["id"] and n.data["session"] == session
    assert session["status"] == "active" and session["title"] == "t"
    assert session["workingDirectory"] == str(tmp_path.resolve())
    assert session["model"] == running_server.settings.default_model
    assert set(session) >= {"id", "workspaceId", "rootEventId", "headEventId", "eventCount", "cost"}
    got = await client.call("session.get", {"sessionId": session["id"]})
    assert {k: got[k] for k in session} == session  # plus children and their totals
    assert got["childSessionIds"] == [] and got["totalWithChildren"]["sessions"] == 1
    listed = await client.call("session.list", {})
    assert [s["id"] for s in listed["sessions"]] == [session["id"]]
    state = await client.call("session.getState", {"sessionId": session["id"]})
    assert state["systemPrompt"] == "be brief" and state["messages"] == []


async def test_create_refuses_a_missing_or_relative_directory(
    client: TronClient, tmp_path: Path
) -> None:
    for wd in [str(tmp_path / "missing"), "relative/dir"]:
        with pytest.raises(RpcCallError) as info:
            await client.call("session.create", {"workingDirectory": wd})
        assert info.value.code == -32602
        assert info.value.data["errors"][0]["field"] == "workingDirectory"


async def test_fork_rewind_end_delete(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    s = await client.call("session.create", {"workingDirectory": str(tmp_path)})
    sid = s["id"]
    first = await append(running_server, sid, "message.user", {"content": "one", "turn": 1})
    await append(
        running_server,
        sid,
        "message.assistant",
        {"content": [{"type": "text", "text": "ok"}], "turn": 1},
    )
    third = await append(running_server, sid, "message.user", {"content": "two", "turn": 2})
    state = await client.call("session.getState", {"sessionId": sid})
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "user"]
    assert state["messages"][1]["content"] == [{"type": "text", "text": "ok"}]
    assert state["headEventId"] == third.id
    at_first = await client.call("session.getState", {"sessionId": sid, "eventId": first.id})
    assert len(at_first["messages"]) == 1

    events = client.notifications(["session.forked", "session.rewound", "session.ended"])
    fork = await client.call("session.fork", {"eventId": first.id, "name": "alt"})
    assert fork["session"]["parentSessionId"] == sid
    assert (await events.next(timeout=5)).data["session"]["id"] == fork["session"]["id"]
    fork_state = await client.call("session.getState", {"sessionId": fork["session"]["id"]})
    assert [m["content"][0]["text"] for m in fork_state["messages"]] == ["one"]
    tree = await client.call("session.getTree", {"sessionId": fork["session"]["id"]})
    assert tree["headEventId"] == fork["forkEventId"]
    assert first.id in [e["id"] for e in tree["events"]]

    rewound = await client.call("session.rewind", {"sessionId": sid, "eventId": first.id})
    assert rewound["headEventId"] == first.id
    assert (await events.next(timeout=5)).method == "session.rewound"
    with pytest.raises(RpcCallError) as info:
        await client.call("session.rewind", {"sessionId": sid, "eventId": "evt_nope"})
    assert info.value.code == -32004

    ended = await client.call("session.end", {"sessionId": sid, "reason": "done"})
    assert ended["status"] == "ended" and ended["endedAt"]
    assert (await events.next(timeout=5)).method == "session.ended"

    with pytest.raises(RpcCallError) as info:
        await client.call("session.delete", {"sessionId": sid})
    assert info.value.code == -32004 and fork["session"]["id"] in info.value.data["forkIds"]
    deleted = client.notifications(["session.deleted"])
    assert await client.call("session.delete", {"sessionId": sid, "cascade": True}) == {
        "deleted": True
    }
    assert (await deleted.next(timeout=5)).data == {"sessionId": sid}
    with pytest.raises(RpcCallError) as info:
        await client.call("session.get", {"sessionId": sid})
    assert info.value.code == -32000


async def test_model_switch_records_an_event(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    s = await client.call(
        "session.create",
        {"workingDirectory": str(tmp_path), "model": "m-1", "provider": "anthropic"},
    )
    result = await client.call(
        "model.switch", {"sessionId": s["id"], "model": "gpt-x", "provider": "openai"}
    )
    assert result == {"previousModel": "m-1", "newModel": "gpt-x", "provider": "openai"}
    state = await client.call("session.getState", {"sessionId": s["id"]})
    assert (state["model"], state["provider"]) == ("gpt-x", "openai")
    listed = await client.call(
        "events.list", {"sessionId": s["id"], "types": ["config.model_switch"]}
    )
    [event] = listed["events"]
    assert event["payload"]["previousModel"] == "m-1" and event["payload"]["newModel"] == "gpt-x"


async def test_an_unknown_provider_is_refused_at_once(
    client: TronClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = "anthropic, google, openai, openai-compatible, openai-responses"
    with pytest.raises(RpcCallError) as info:
        await client.call("session.create", {"workingDirectory": str(tmp_path), "provider": "nope"})
    assert info.value.code == -32602
    assert (
        info.value.message == f"provider: unknown provider 'nope'; the known providers are {known}"
    )
    assert (await client.call("session.list"))["sessions"] == []  # nothing was created

    # A known provider without a key is a valid choice (model.list says it has none).
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    s = await client.call(
        "session.create",
        {"workingDirectory": str(tmp_path), "model": "m-1", "provider": "google"},
    )
    with pytest.raises(RpcCallError) as info:
        await client.call("model.switch", {"sessionId": s["id"], "model": "x", "provider": "nope2"})
    assert info.value.code == -32602 and "unknown provider 'nope2'" in info.value.message
    assert known in info.value.message
    state = await client.call("session.getState", {"sessionId": s["id"]})
    assert (state["model"], state["provider"]) == ("m-1", "google")  # nothing was recorded
    switched = await client.call(
        "model.switch", {"sessionId": s["id"], "model": "gpt-x", "provider": "openai"}
    )
    assert switched["provider"] == "openai"


async def test_model_list_shape_or_unavailable(client: TronClient) -> None:
    try:
        result = await client.call("model.list")
    except RpcCallError as exc:
        assert exc.code == -32002  # the catalog is not installed
        return
    for m in result["models"]:
        assert set(m) == {
            "id", "provider", "name", "contextWindow", "maxOutput",
            "supportsThinking", "supportsImages", "supportsTools", "available",
        }  # fmt: skip


async def test_list_by_working_directory(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    """``workingDirectory`` lists one folder's sessions however many others are more
    recent, as session.create names the folder (symlinks resolved), writing nothing."""
    here, there, unused = tmp_path / "here", tmp_path / "there", tmp_path / "unused"
    for folder in (here, there, unused):
        folder.mkdir()
    (tmp_path / "link").symlink_to(here)
    mine = await client.call("session.create", {"workingDirectory": str(here)})
    others = [
        (await client.call("session.create", {"workingDirectory": str(there)}))["id"]
        for _ in range(3)
    ]
    for spelling in (str(here), str(tmp_path / "link"), str(here) + "/"):
        listed = await client.call("session.list", {"workingDirectory": spelling, "limit": 1})
        assert [s["id"] for s in listed["sessions"]] == [mine["id"]], spelling
    listed = await client.call("session.list", {"workingDirectory": str(there), "limit": 2})
    assert [s["id"] for s in listed["sessions"]] == others[::-1][:2]  # most recent first
    assert (await client.call("session.list", {"workingDirectory": str(unused)}))["sessions"] == []
    # Combined with a workspace: both must agree.
    both = {"workingDirectory": str(here), "workspaceId": mine["workspaceId"]}
    assert len((await client.call("session.list", both))["sessions"]) == 1
    both["workspaceId"] = "ws_other"
    assert (await client.call("session.list", both))["sessions"] == []
    with pytest.raises(RpcCallError) as info:
        await client.call("session.list", {"workingDirectory": "relative/dir"})
    assert info.value.code == -32602
    assert info.value.data["errors"][0]["field"] == "workingDirectory"
    # Listing an unused folder created no workspace for it.
    store = running_server.services.store
    assert store is not None
    assert await running_server.run(lambda: store.find_workspace(str(unused))) is None
    found = await running_server.run(lambda: store.find_workspace(str(here)))
    assert found is not None and found.id == mine["workspaceId"]
