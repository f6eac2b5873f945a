"""``tron -p`` as a subprocess against a real server and the scripted LLM: the three
output formats parsed and checked, exit statuses, the prompt on stdin, a TTY and
no TTY, and the errors a user meets (each a sentence, never a traceback)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.support.ports import port_for_later
from tests.support.scripted_llm import Response, Text, ToolUse, Usage, error_response
from tests.support.server import RunningServer
from tests.terminal.conftest import TRON, TronEnv


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_text_prints_the_final_reply(env: TronEnv) -> None:
    project = env.project("text")
    (project / "hello.txt").write_text("hi there\n")
    env.llm.add(
        Response([Text("Let me look."), ToolUse("Read", {"file_path": "hello.txt"})]),
        Response([Text("The file says **hi there**.")]),
    )
    proc = env.tron("-p", "What is in hello.txt?", cwd=project)
    assert proc.returncode == 0, proc.stderr
    # Only the last reply: the text before the tool call is not the answer.
    assert proc.stdout == "The file says **hi there**.\n"
    assert proc.stderr == ""
    # The tool really ran: its result went back to the model.
    assert "hi there" in json.dumps(env.llm.requests[-1]["messages"][-1])


def test_json_has_reply_session_usage_and_cost(env: TronEnv) -> None:
    project = env.project("json")
    env.llm.add(Response([Text("Forty-two.")], usage=Usage(input_tokens=120, output_tokens=7)))
    proc = env.tron("-p", "The answer?", "--output-format", "json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["type"] == "result"
    assert result["isError"] is False and result["error"] is None
    assert result["result"] == "Forty-two."
    assert result["stopReason"] == "end_turn" and result["turns"] == 1
    assert result["usage"]["inputTokens"] == 120 and result["usage"]["outputTokens"] == 7
    assert isinstance(result["cost"], float) and result["cost"] > 0
    assert result["sessionCost"] is not None and result["sessionCost"] > 0
    session = env.store("get_session", result["sessionId"])
    assert session.working_directory == str(project.resolve())
    assert session.title == "The answer?"


def test_stream_json_is_one_object_per_notification(env: TronEnv) -> None:
    project = env.project("stream")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "echo streamed-out"})]),
        Response([Text("Ran it: streamed-out was printed.")]),
    )
    proc = env.tron("-p", "run echo", "--output-format", "stream-json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = [orjson.loads(line) for line in proc.stdout.splitlines()]
    *notes, result = lines
    assert all(n["type"] == "notification" for n in notes)
    methods = [n["method"] for n in notes]
    for kind in (
        "agent.turn_start",
        "agent.tool_start",
        "agent.tool_end",
        "agent.turn_end",
        "agent.text_delta",
        "events.new",
    ):
        assert kind in methods, kind
    assert methods[-1] == "agent.complete"
    assert {n["sessionId"] for n in notes} == {result["sessionId"]}
    deltas = "".join(n["data"]["delta"] for n in notes if n["method"] == "agent.text_delta")
    assert deltas == result["result"] == "Ran it: streamed-out was printed."
    ends = [n["data"] for n in notes if n["method"] == "agent.tool_end"]
    assert "streamed-out" in json.dumps(ends)
    assert result["turns"] == 2


def test_stream_json_includes_sub_agents_and_ends_with_the_parent(env: TronEnv) -> None:
    """A Task's child streams its own agent.* lines (its sessionId, its parent named);
    its agent.complete does not end the parent's output."""
    project = env.project("stream-task")
    task = {"description": "look", "prompt": "Say what you see."}
    env.llm.add(
        Response([ToolUse("Task", task, id="toolu_stream")]),
        Response([Text("I see nothing.")]),  # the child
        Response([Text("The helper saw nothing.")]),
    )
    proc = env.tron("-p", "delegate", "--output-format", "stream-json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    *notes, result = [orjson.loads(line) for line in proc.stdout.splitlines()]
    parent = result["sessionId"]
    assert result["result"] == "The helper saw nothing." and result["turns"] == 2
    children = [n for n in notes if n["sessionId"] != parent]
    assert children and all(n["data"]["parentSessionId"] == parent for n in children)
    assert {n["data"]["parentToolCallId"] for n in children} == {"toolu_stream"}
    assert "agent.complete" in [n["method"] for n in children]
    assert notes[-1]["method"] == "agent.complete" and notes[-1]["sessionId"] == parent


def test_prompt_from_stdin(env: TronEnv) -> None:
    project = env.project("stdin")
    env.llm.add(Response([Text("Got it.")]))
    proc = env.tron("-p", cwd=project, input="a prompt\nfrom a pipe\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Got it.\n"
    last_user = env.llm.requests[-1]["messages"][-1]
    assert last_user["content"][0]["text"] == "a prompt\nfrom a pipe\n"


def test_no_prompt_and_no_stdin_is_a_usage_error(env: TronEnv) -> None:
    proc = env.tron("-p", cwd=env.project("noprompt"), input="   \n")
    assert proc.returncode == 2
    assert "prompt is empty" in proc.stderr
    _no_traceback(proc)


def test_a_failed_turn_exits_non_zero(env: TronEnv) -> None:
    project = env.project("failed")
    env.llm.add(error_response(400, "invalid_request_error", "prompt is too long"))
    proc = env.tron("-p", "fail please", "--output-format", "json", cwd=project)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["isError"] is True
    assert "prompt is too long" in result["error"]
    assert "prompt is too long" in proc.stderr
    _no_traceback(proc)


def test_continue_uses_this_folders_latest_session(env: TronEnv) -> None:
    project = env.project("cont")
    other = env.project("cont-other")
    env.llm.add(Response([Text("first")]), Response([Text("elsewhere")]), Response([Text("again")]))
    first = json.loads(env.tron("-p", "one", "--output-format", "json", cwd=project).stdout)
    env.tron("-p", "other folder", cwd=other)
    again = env.tron("-p", "-c", "two", "--output-format", "json", cwd=project)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["sessionId"] == first["sessionId"]
    # The model saw the earlier exchange of this folder's session, not the other folder's.
    history = json.dumps(env.llm.requests[-1]["messages"])
    assert "first" in history and "elsewhere" not in history


def test_resume_by_id_and_unknown_session(env: TronEnv) -> None:
    project = env.project("resume")
    env.llm.add(Response([Text("one")]), Response([Text("two")]))
    first = json.loads(env.tron("-p", "x", "--output-format", "json", cwd=project).stdout)
    sid = first["sessionId"]
    proc = env.tron("-p", "-r", sid[:-4], "y", "--output-format", "json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sessionId"] == sid
    missing = env.tron("-p", "-r", "sess_nope", "z", cwd=project)
    assert missing.returncode == 4
    assert "Unknown session 'sess_nope'" in missing.stderr and "tron -r" in missing.stderr
    _no_traceback(missing)
    nothing = env.tron("-p", "-c", "z", cwd=env.project("resume-empty"))
    assert nothing.returncode == 4 and "No session to continue" in nothing.stderr


def test_fork_from_an_event(env: TronEnv) -> None:
    project = env.project("fork")
    env.llm.add(Response([Text("original")]), Response([Text("forked reply")]))
    first = json.loads(env.tron("-p", "start", "--output-format", "json", cwd=project).stdout)
    events = env.store("get_events", first["sessionId"])
    user = next(e for e in events if e.type == "message.user")
    proc = env.tron(
        "-p", "--fork", user.id, "after the fork", "--output-format", "json", cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    forked = json.loads(proc.stdout)
    assert forked["sessionId"] != first["sessionId"]
    assert env.store("get_session", forked["sessionId"]).fork_from_event_id == user.id
    # History up to the fork point (the user message), without the original reply.
    history = json.dumps(env.llm.requests[-1]["messages"])
    assert "start" in history and "original" not in history
    bad = env.tron("-p", "--fork", "evt_nope", "x", cwd=project)
    assert bad.returncode == 4 and "Cannot fork from 'evt_nope'" in bad.stderr


def test_max_turns_stops_the_run(env: TronEnv) -> None:
    project = env.project("maxturns")
    (project / "a.txt").write_text("alpha\n")
    env.llm.add(
        Response([ToolUse("Read", {"file_path": "a.txt"})]),
        Response([ToolUse("Read", {"file_path": "a.txt"})]),
    )
    before = len(env.llm.requests)
    proc = env.tron("-p", "read it", "--max-turns", "1", "--output-format", "json", cwd=project)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["stopReason"] == "max_turns" and result["turns"] == 1
    assert result["isError"] is True and "max_turns" in proc.stderr
    assert len(env.llm.requests) == before + 1  # one LLM call, not two
    _no_traceback(proc)


def test_permission_mode_plan_refuses_writes(env: TronEnv) -> None:
    project = env.project("plan")
    env.llm.add(
        Response([ToolUse("Write", {"file_path": "plan.txt", "content": "x"})]),
        Response([Text("I would write plan.txt.")]),
    )
    proc = env.tron("-p", "write it", "--permission-mode", "plan", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "I would write plan.txt.\n"
    assert not (project / "plan.txt").exists()
    assert "plan mode" in json.dumps(env.llm.requests[-1]["messages"][-1])
    [session] = [s for s in env.store("list_sessions") if s.working_directory == str(project)]
    modes = env.store("get_events", session.id, types=["config.permission_mode"])
    assert [e.payload["newMode"] for e in modes] == ["plan"]


def test_print_mode_declines_approvals_and_questions(env: TronEnv) -> None:
    """Nobody can answer in print mode: an approval is denied and a question told so,
    and the model sees why (the run still ends normally)."""
    project = env.project("decline")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "touch x.txt"}),
                  ToolUse("AskUser", {"question": "Which branch?"})]),
        Response([Text("Could not ask; stopping here.")]),
    )  # fmt: skip
    proc = env.tron("-p", "go", "--permission-mode", "default", cwd=project)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(env.llm.requests[-1]["messages"][-1])
    assert "tron -p runs without a person to ask" in sent and not (project / "x.txt").exists()
    assert "No one can answer" in sent


def test_skipping_permissions_needs_a_server_that_allows_it(env: TronEnv, tmp_path: Path) -> None:
    strict = RunningServer(
        tmp_path / "strict-home",
        anthropic_base_url=env.llm.base_url,
        allow_bypass_permissions=False,
        default_permission_mode="default",
    ).start()
    try:
        project = env.project("bypass")
        command = [*TRON, "--home", str(strict.home), "--server", strict.ws_url]
        proc = subprocess.run(
            [*command, "-p", "x", "--dangerously-skip-permissions"],
            cwd=project, capture_output=True, text=True, timeout=60, env=env.env(),
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "--allow-bypass-permissions" in proc.stderr
        _no_traceback(proc)
        assert strict.run_sync(lambda: strict.services.store.list_sessions()) == []
    finally:
        strict.stop()
    # The module's server allows it: the same flag runs (nothing asks).
    env.llm.add(Response([ToolUse("Bash", {"command": "touch free.txt"})]), Response([Text("ok")]))
    project = env.project("bypass-ok")
    proc = env.tron("-p", "x", "--dangerously-skip-permissions", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "free.txt").exists()


def test_connection_errors_say_what_to_do(env: TronEnv, tmp_path: Path) -> None:
    project = env.project("errors")
    # Nothing listens there, and --server means "that one": no server is started.
    proc = env.tron("-p", "x", "--server", "ws://127.0.0.1:9/rpc", server=False, cwd=project)
    assert proc.returncode == 3 and "No tron-server answers at ws://127.0.0.1:9/rpc" in proc.stderr
    # A home whose token is not the server's.
    home = tmp_path / "other-home"
    home.mkdir()
    (home / "server-token").write_text("not-the-token")
    proc = subprocess.run(
        [*TRON, "--home", str(home), "--server", env.server.ws_url, "-p", "x"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env=env.env(),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3
    assert "refused the token" in proc.stderr and "--home" in proc.stderr
    # The right server, a wrong path: the token is not to blame.
    wrong = env.server.ws_url.replace("/rpc", "/")
    proc = env.tron("-p", "x", "--server", wrong, server=False, cwd=project)
    assert proc.returncode == 3 and "endpoint is ws://HOST:PORT/rpc" in proc.stderr, proc.stderr
    assert "token" not in proc.stderr
    for bad in ("http//oops", "ws://127.0.0.1:99999/rpc", "ws://[::1/rpc"):
        proc = env.tron("-p", "x", "--server", bad, server=False, cwd=project)
        assert proc.returncode == 3 and "ws://HOST:PORT/rpc" in proc.stderr, proc.stderr
        _no_traceback(proc)


def test_print_mode_on_a_tty(env: TronEnv) -> None:
    """The same run with stdin, stdout and stderr on a pseudo-terminal."""
    project = env.project("tty")
    env.llm.add(Response([Text("Hello, terminal.")]))
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*TRON, "--home", str(env.server.home), "--server", env.server.ws_url, "-p", "hi"],
            cwd=project,
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env.env(),
        )
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(60) == 0, output
    finally:
        os.close(leader)
    assert output.decode().replace("\r\n", "\n") == "Hello, terminal.\n"


def test_starts_a_server_in_the_background_when_none_answers(env: TronEnv, tmp_path: Path) -> None:
    """No server on this home: tron starts one (detached, logging to its file), says
    so, and the next tron attaches to it instead of starting another."""
    import signal
    import time

    from tron_server.server_record import process_exists, read_server_record

    home = tmp_path / "fresh-home"
    project = env.project("autostart")
    extra = env.env(
        TRON_PORT=str(port_for_later()),  # the default port of this test's world
        TRON_ANTHROPIC_BASE_URL=env.llm.base_url,
        TRON_LOG_LEVEL="warning",
    )
    env.llm.add(Response([Text("from a fresh server")]), Response([Text("same server")]))
    first = subprocess.run(
        [*TRON, "--home", str(home), "-p", "hello"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=90,
        env=extra,
        stdin=subprocess.DEVNULL,
        umask=0o022,  # a usual umask: what tron creates must be user-only anyway
    )
    record = read_server_record(home)
    try:
        assert first.returncode == 0, first.stderr
        assert first.stdout == "from a fresh server\n"
        assert "Started tron-server in the background" in first.stderr
        assert str(home / "logs" / "tron-server-output.log") in first.stderr
        # The server's output (paths, prompts) is as private as the rest of the home.
        for path, mode in ((home, 0o700), (home / "logs", 0o700),
                           (home / "logs" / "tron-server-output.log", 0o600)):  # fmt: skip
            assert path.stat().st_mode & 0o777 == mode, (path, oct(path.stat().st_mode))
        assert record is not None and process_exists(record.pid)  # it outlived the client
        second = subprocess.run(
            [*TRON, "--home", str(home), "-p", "again"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=90,
            env=extra,
            stdin=subprocess.DEVNULL,
        )
        assert second.returncode == 0, second.stderr
        assert second.stdout == "same server\n" and "Started" not in second.stderr
        assert (home / "logs" / "tron-server-output.log").stat().st_size > 0
        assert (home / "database" / "prod.db").exists()  # the same home's database
    finally:
        if record is not None and process_exists(record.pid):
            os.kill(record.pid, signal.SIGTERM)  # the server this test started
            deadline = time.monotonic() + 20
            while process_exists(record.pid) and time.monotonic() < deadline:
                time.sleep(0.1)


def test_no_start_fails_clearly(env: TronEnv, tmp_path: Path) -> None:
    extra = env.env(TRON_PORT=str(port_for_later()))
    proc = subprocess.run(
        [*TRON, "--home", str(tmp_path / "h"), "--no-start", "-p", "x"],
        cwd=env.project("nostart"),
        capture_output=True,
        text=True,
        timeout=60,
        env=extra,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3 and "No tron-server answers" in proc.stderr
    _no_traceback(proc)


def test_no_server_and_none_can_start_says_why(env: TronEnv, tmp_path: Path) -> None:
    """Nothing answers and the server tron starts cannot run: a sentence naming the
    cause and what to do, exit 3, never "unexpected error" or a traceback."""
    import signal
    import time

    from tron_server.server_record import process_exists, read_server_record

    project = env.project("cannot-start")
    # A file where the home should be: no server can keep its token or database there.
    not_a_home = tmp_path / "home-file"
    not_a_home.write_text("")
    proc = subprocess.run(
        [*TRON, "--home", str(not_a_home), "-p", "x"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env=env.env(TRON_PORT=str(port_for_later())),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3, proc.stderr
    assert "none could be started" in proc.stderr and "is a file, not a folder" in proc.stderr
    assert "unexpected error" not in proc.stderr
    _no_traceback(proc)
    # A server that starts and exits at once (its database cannot be reached): its
    # own reason is shown, from the log it wrote.
    home = tmp_path / "unreachable-db"
    proc = subprocess.run(
        [*TRON, "--home", str(home), "-p", "x"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=90,
        env=env.env(
            TRON_PORT=str(port_for_later()),
            TRON_DATABASE_URL="postgresql+psycopg://nobody@127.0.0.1:1/none",
        ),
        stdin=subprocess.DEVNULL,
    )
    record = read_server_record(home)
    if record is not None and process_exists(record.pid):  # pragma: no cover - a failure
        os.kill(record.pid, signal.SIGTERM)
        time.sleep(1)
    assert proc.returncode == 3, proc.stderr
    assert "the one started in the background exited" in proc.stderr
    assert "cannot reach PostgreSQL" in proc.stderr
    _no_traceback(proc)


def test_interactive_without_a_terminal_points_to_print_mode(env: TronEnv) -> None:
    proc = env.tron(cwd=env.project("notty"))
    assert proc.returncode == 2 and "use -p for scripts" in proc.stderr
    _no_traceback(proc)


def test_model_flag_for_a_new_and_a_continued_session(env: TronEnv) -> None:
    project = env.project("model")
    env.llm.add(Response([Text("haiku here")]), Response([Text("opus here")]))
    proc = env.tron("-p", "--model", "claude-haiku-4-5", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert env.llm.requests[-1]["model"] == "claude-haiku-4-5"
    proc = env.tron("-p", "-c", "--model", "claude-opus-4-1", "again", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert env.llm.requests[-1]["model"] == "claude-opus-4-1"
    assert "haiku here" in json.dumps(env.llm.requests[-1]["messages"])


def test_usage_errors(env: TronEnv) -> None:
    project = env.project("usage")
    for args, message in (
        (["--output-format", "json"], "--output-format needs -p"),
        (["-p", "--max-turns", "0", "x"], "at least 1"),
        (["-p", "-r"], "-r needs a session id with -p"),
        (["-c", "-r", "x"], "not allowed with argument"),
    ):
        proc = env.tron(*args, cwd=project)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        _no_traceback(proc)


def test_this_folders_sessions_however_many_others_are_newer(
    env: TronEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-c``/``-r`` ask the server for this folder's sessions, rather than filter its
    most recent ones (one page of them: here, one)."""
    import asyncio

    from tron_server.terminal import sessions

    here, there = env.project("folder-here").resolve(), env.project("folder-there").resolve()

    def create(folder: Path) -> str:
        session = env.store(
            "create_session", working_directory=str(folder), model="m", provider="anthropic"
        )
        return str(session.id)

    mine = create(here)
    create(there)
    create(there)
    monkeypatch.setattr(sessions, "LIST_LIMIT", 1)

    async def main() -> tuple[list[dict[str, object]], dict[str, object]]:
        async with env.server.connect() as client:
            found = await sessions.folder_sessions(client, here)
            return found, await sessions.latest_session(client, here)

    found, latest = asyncio.run(main())
    assert [s["id"] for s in found] == [mine] and latest["id"] == mine
