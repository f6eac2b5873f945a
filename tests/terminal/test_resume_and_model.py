"""``tron -r PREFIX`` and ``tron -c SESSION`` across folders, ``--model`` refused when
no configured provider serves it (with the nearest names), and ``--provider`` (issue
27.12), as subprocesses against the module's server (only anthropic is configured)."""

from __future__ import annotations

import json

from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TronEnv


def _json(proc: object) -> dict[str, object]:
    out = getattr(proc, "stdout", "")
    assert getattr(proc, "returncode", None) == 0, getattr(proc, "stderr", "")
    result: dict[str, object] = json.loads(out)
    return result


def test_resume_and_continue_find_a_session_of_any_folder_by_prefix(env: TronEnv) -> None:
    there, here = env.project("prefix-there"), env.project("prefix-here")
    env.llm.add(*(Response([Text(f"reply {i}")]) for i in range(4)))
    first = _json(env.tron("-p", "in there", "--output-format", "json", cwd=there))
    sid = str(first["sessionId"])
    # From another folder, by a prefix without "sess_" (as tron-db show takes it).
    # Ids begin with their time (UUIDv7): a prefix must reach the random part to be unique
    # among the sessions other tests of this server made in the same seconds.
    short = sid.removeprefix("sess_")[:23]
    proc = env.tron("-p", "-r", short, "from here", "--output-format", "json", cwd=here)
    assert _json(proc)["sessionId"] == sid
    assert f"works in {there.resolve()}" in proc.stderr
    assert "in there" in json.dumps(env.llm.requests[-1]["messages"])
    # -c with a session id continues that one.
    proc = env.tron("-p", "-c", sid[:28], "continued", "--output-format", "json", cwd=here)
    assert _json(proc)["sessionId"] == sid
    # -c alone still continues this folder's own (none here yet: a clear refusal),
    # and a word after -c is still the first message.
    alone = env.tron("-p", "-c", "hello there", cwd=here)
    assert alone.returncode == 4 and "No session to continue" in alone.stderr
    # A prefix of several sessions names them.
    env.tron("-p", "another", cwd=there)
    ambiguous = env.tron("-p", "-r", "sess_", "x", cwd=here)
    assert ambiguous.returncode == 2 and "is the start of" in ambiguous.stderr
    assert "give more of the id" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr


def test_help_says_resume_takes_any_folder_and_a_prefix(env: TronEnv) -> None:
    proc = env.tron("--help", cwd=env.project("help-resume"))
    text = " ".join(proc.stdout.split())
    assert "of any folder" in text and "unique prefix" in text
    assert "--provider" in text


def test_model_no_configured_provider_serves_is_refused_with_the_nearest(env: TronEnv) -> None:
    project = env.project("model-check")
    sessions_before = len(env.store("list_sessions"))
    typo = env.tron("-p", "--model", "claude-sonet-4-5", "hi", cwd=project)
    assert typo.returncode == 2, typo.stderr
    assert "unknown model 'claude-sonet-4-5'" in typo.stderr
    assert "claude-sonnet-4-5" in typo.stderr  # the nearest it does serve
    # A model of a provider this server has no key for.
    other = env.tron("-p", "--model", "gpt-4o", "hi", cwd=project)
    assert other.returncode == 2, other.stderr
    assert "no configured provider serves gpt-4o" in other.stderr
    assert "OPENAI_API_KEY" in other.stderr
    assert len(env.store("list_sessions")) == sessions_before  # nothing was made
    assert "Traceback" not in typo.stderr + other.stderr


def test_provider_flag(env: TronEnv) -> None:
    project = env.project("provider-flag")
    env.llm.add(Response([Text("anthropic here")]))
    ok = env.tron("-p", "--provider", "anthropic", "hi", "--output-format", "json", cwd=project)
    session = env.store("get_session", str(_json(ok)["sessionId"]))
    assert session.provider == "anthropic"
    missing = env.tron("-p", "--provider", "openai", "hi", cwd=project)
    assert missing.returncode == 2 and "not configured on this server" in missing.stderr
    assert "OPENAI_API_KEY" in missing.stderr
    unknown = env.tron("-p", "--provider", "nope", "hi", cwd=project)
    assert unknown.returncode == 2 and "unknown provider 'nope'" in unknown.stderr
