"""Which handoffs a new session starts with, through a real tron-server, the scripted model
and both backends: among several handoffs of the workspace (different topics, different
ages, one made in a fork), the first prompt gets those :func:`relevant_handoffs` ranks
first (search rank, then recency), at most ``MAX_HANDOFFS``, each whole or not at all
within the budget (``memory/loader.py``); a newer handoff's recency bonus outweighs an
older one's small lead in search rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.test_memory import (
    events_of,
    first_user_text,
    memory_reply,
    mserver,
    new_session,
    work_and_end,
)
from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import RunningServer
from tron_server.client import TronClient
from tron_server.memory.loader import CHARS_PER_TOKEN, MAX_HANDOFFS, MEMORY_BUDGET_TOKENS

__all__ = ["mserver"]

pytestmark = pytest.mark.anyio


def topic(summary: str, state: str) -> Response:
    """A handoff about one topic only (no shared words with the others)."""
    return memory_reply(
        summary, ledger=None, codeChanges=[], currentState=state, nextSteps=[], blockers=[],
        patterns=[],
    )  # fmt: skip


async def handoff_of(client: TronClient, session_id: str) -> str:
    [handoff] = await events_of(client, session_id, "memory.handoff")
    return str(handoff["id"])


async def test_the_relevant_handoffs_come_first_then_the_recent_ones_within_the_budget(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with mserver.connect() as client:
        # Oldest: about the quokka parser, but too long to fit the budget whole.
        huge = "The quokka parser notes. " + "Tokens and more tokens. " * 900
        assert len(huge) // CHARS_PER_TOKEN > MEMORY_BUDGET_TOKENS
        big = await handoff_of(client, await work_and_end(
            client, llm, project, "write notes", topic(huge, "notes written"),
        ))  # fmt: skip
        # The quokka parser's lexer; then a fork of that session does its grammar.
        lexer_session = await work_and_end(
            client, llm, project, "write the lexer",
            topic("Wrote the quokka parser lexer", "the lexer tokenizes identifiers"),
        )  # fmt: skip
        lexer = await handoff_of(client, lexer_session)
        [answer] = await events_of(client, lexer_session, "message.assistant")
        forked = await client.call("session.fork", {"eventId": answer["id"]})
        fork = forked["session"]["id"]
        llm.add(Response([Text("Grammar added.")]))
        await client.send_message_and_wait(fork, "now the grammar")
        llm.add(topic("Added grammar rules to the quokka parser", "the grammar covers loops"))
        await client.call("session.end", {"sessionId": fork})
        grammar = await handoff_of(client, fork)
        # Then four unrelated sessions, each newer than the last.
        unrelated = []
        for summary, state in [
            ("Styled the settings page in teal", "the theme switcher works"),
            ("Deployed the container to staging", "staging answers health checks"),
            ("Rotated the logging files nightly", "old logs are compressed"),
            ("Migrated the billing tables", "invoices have a currency column"),
        ]:
            session = await work_and_end(client, llm, project, "chores", topic(summary, state))
            unrelated.append(await handoff_of(client, session))

        # A new session about the quokka parser: the relevant handoffs first (the huge
        # one left out, as it does not fit whole), then the newest unrelated one, and no
        # more than MAX_HANDOFFS were considered.
        b = await new_session(client, project)
        llm.add(Response([Text("Carrying on.")]))
        await client.send_message_and_wait(b, "the quokka parser again")
        [loaded] = await events_of(client, b, "memory.loaded")
        injected = loaded["payload"]["handoffIds"]
        assert len(injected) <= MAX_HANDOFFS
        assert set(injected[:2]) == {lexer, grammar}, (injected, lexer, grammar, unrelated)
        assert injected[2:] == [unrelated[-1]]  # the 4th place went to the huge one
        assert big not in injected and not set(unrelated[:-1]) & set(injected)
        text = first_user_text(llm, -1)
        assert "Wrote the quokka parser lexer" in text  # from the original session
        assert "Added grammar rules to the quokka parser" in text  # from its fork
        assert "Migrated the billing tables" in text and "Tokens and more" not in text
        assert text.index("quokka parser lexer") < text.index("billing tables")
        assert text.index("grammar rules") < text.index("billing tables")
        assert "teal" not in text and "staging" not in text and "logging" not in text
        assert len(text) // CHARS_PER_TOKEN <= MEMORY_BUDGET_TOKENS
        assert loaded["payload"]["tokens"] <= loaded["payload"]["budgetTokens"]


async def test_recency_outweighs_a_small_lead_in_search_rank(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with mserver.connect() as client:
        focused = await handoff_of(client, await work_and_end(
            client, llm, project, "first",
            topic("Quokka, quokka, quokka: the quokka lexer", "quokka done"),
        ))  # fmt: skip
        passing = await handoff_of(client, await work_and_end(
            client, llm, project, "second",
            topic("Renamed the build scripts, the config loader and one quokka test file, "
                  "then tidied the release notes and the changelog", "tidy"),
        ))  # fmt: skip
        # The search ranks the older, focused handoff first …
        hits = await client.call(
            "memory.search", {"query": "quokka", "workingDirectory": str(project)}
        )
        ranked = [h["eventId"] for h in hits["hits"] if h["eventId"] in (focused, passing)]
        assert ranked == [focused, passing]
        # … but the newer one comes first: its recency bonus outweighs the second place
        # (2 × 1/(1 + 0.25) + 1 against 2 × 1 + 1/2).
        b = await new_session(client, project)
        llm.add(Response([Text("On it.")]))
        await client.send_message_and_wait(b, "quokka")
        [loaded] = await events_of(client, b, "memory.loaded")
        assert loaded["payload"]["handoffIds"] == [passing, focused]
