"""The runtime's use cases: send a message, abort a run, make sure a session is idle.

What the RPC methods (``agent.message``, ``agent.abort``, ``session.rewind``…) and the
slash commands call, so that neither has to import the other and both do exactly the
same thing. It sits between ``services`` and the agent runtime (``agent/``,
``interaction/``) and speaks no JSON-RPC: errors are the typed errors of
:mod:`tron_server.errors`, which the RPC layer maps to codes.

    runtime = Runtime(orchestrator, interaction)   # Services.runtime builds it
    runtime.ensure_idle(session_id, "rewind")       # AgentBusyError while a turn runs
    await runtime.send(session_id, "hello", queue=True)
    await runtime.abort(session_id)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import AgentBusyError, ManagerUnavailableError

if TYPE_CHECKING:  # types only: importing the runtime is paid for in open_services
    from tron_events import Event

    from .agent.orchestrator import Orchestrator
    from .cluster.node import ClusterNode
    from .interaction import Interaction

__all__ = ["Runtime"]


@dataclass(frozen=True, slots=True)
class Runtime:
    """The agent runtime's entry points. ``orchestrator`` None: a server without an
    agent (some tests), where sending answers -32002; ``interaction`` None: no
    questions or approvals (nothing is ever pending); ``cluster`` None: the only server
    on its database (else another server may be running the session)."""

    orchestrator: Orchestrator | None
    interaction: Interaction | None = None
    cluster: ClusterNode | None = None

    def agent(self) -> Orchestrator:
        """The orchestrator, or -32002 when this server runs none."""
        if self.orchestrator is None:
            raise ManagerUnavailableError("the agent runtime is not running")
        return self.orchestrator

    def is_busy(self, session_id: str) -> bool:
        """Whether the session's agent runs a turn, here or on another server."""
        if self.orchestrator is not None and self.orchestrator.is_running(session_id):
            return True
        return self.cluster is not None and self.cluster.owner_elsewhere(session_id) is not None

    def ensure_idle(self, session_id: str, action: str) -> None:
        """-32003 when the session's agent is running a turn (abort it first), on this
        server or another."""
        if self.is_busy(session_id):
            raise AgentBusyError(
                f"cannot {action} session {session_id!r} while its agent is running; "
                "call agent.abort first or wait for agent.complete"
            )

    async def send(
        self,
        session_id: str,
        content: str | list[dict[str, Any]],
        *,
        queue: bool = False,
        reasoning_level: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Start (or queue) a run; a request a stopped run left pending is cancelled first
        (its turn is closed with results saying so). Returns ``agent.message``'s result."""
        orchestrator = self.agent()
        interaction = self.interaction
        # One read of the session's row and head for both (the pending request's check
        # and the message's); a session that does not exist is refused by send_message.
        # The state too: a run that starts now goes on from it (one trip to the store).
        read = await orchestrator.read_for_message(session_id)
        session = read.session
        resume = (
            await interaction.cancel_pending(session_id, session=session, head=read.head)
            if interaction is not None
            else None
        )
        try:
            return await orchestrator.send_message(
                session_id, content, queue=queue, reasoning_level=reasoning_level, resume=resume,
                session=session, start=read if resume is None else None, **options,
            )  # fmt: skip
        except BaseException:
            if resume is not None and interaction is not None:
                interaction.release(resume.pending.request_id)
            raise

    async def abort(self, session_id: str) -> bool:
        """Stop the running turn and drop queued messages; on an idle session, end the
        question or approval a stopped run left pending. False when there was nothing."""
        orchestrator = self.agent()
        if await orchestrator.abort(session_id):
            return True
        # After a restart nothing runs, but a request may still wait in the events: the
        # abort ends it as it would have ended a live wait (without calling the model).
        interaction = self.interaction
        resume = (
            await interaction.cancel_pending(session_id, "aborted")
            if interaction is not None
            else None
        )
        if resume is None or interaction is None:
            return False
        try:
            await orchestrator.send_message(session_id, "", resume=resume)
        except BaseException:
            interaction.release(resume.pending.request_id)
            raise
        await orchestrator.wait_finished(session_id)
        return True

    async def handoff(self, session_id: str) -> Event:
        """Make a handoff of the session now (``memory.handoff``, ``/handoff``): -32003 while
        its agent runs, -32004 when handoffs are off or there is nothing to remember yet,
        -32005 when the model call fails."""
        self.ensure_idle(session_id, "make a handoff of")
        return await self.agent().handoff(session_id)
