"""``--model`` and ``--provider`` checked against what the server can serve
(``model.list``), before any session is made: a model no configured provider
serves is refused with the nearest names it does serve.

A model in the catalog runs on the catalog's provider (so ``--model gpt-4o`` gets
``openai``, not the server's default provider). A name the catalog does not know
is taken only with a provider that serves any name (``openai-compatible``: Ollama,
vLLM …) or one named with ``--provider`` (a model newer than the catalog).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ..client import TronClient
from .errors import EXIT_USAGE, TerminalError

#: Providers whose model names are the server's business, not the catalog's.
ANY_NAME = frozenset({"openai-compatible"})


@dataclass(frozen=True)
class Choice:
    """The model and provider a session is made (or switched) with."""

    model: str | None
    provider: str | None


def _nearest(name: str, names: list[str], n: int = 4) -> list[str]:
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.4)
    lowered = name.lower()
    contains = [x for x in names if lowered in x.lower() and x not in close]
    return (close + contains)[:n]


async def check_choice(
    client: TronClient, model: str | None, provider: str | None, default_provider: str = ""
) -> Choice:
    """The model and provider to use for ``--model`` / ``--provider`` (the server's
    ``default_provider`` when neither names one); raises :class:`TerminalError`
    naming what the server can serve instead."""
    if model is None and provider is None:
        return Choice(None, None)
    listed = await client.call("model.list")
    providers: dict[str, dict[str, Any]] = {
        str(p["id"]): p for p in listed.get("providers") or [] if isinstance(p, dict)
    }
    configured = [name for name, p in providers.items() if p.get("configured")]
    models = [m for m in listed.get("models") or [] if isinstance(m, dict)]
    if provider is not None:
        if provider not in providers:
            raise TerminalError(
                f"unknown provider {provider!r}; this server knows {', '.join(providers)}.",
                EXIT_USAGE,
            )
        if provider not in configured:
            hint = providers[provider].get("hint") or "configure it in tron-server's environment"
            raise TerminalError(
                f"the provider {provider} is not configured on this server: {hint} "
                "(then `tron server restart`). Configured: "
                f"{', '.join(configured) or 'none'}.",
                EXIT_USAGE,
            )
    if model is None:
        return Choice(None, provider)
    serves = {"openai": ("openai", "openai-responses")}  # the catalog's openai runs on both
    usable = [str(m["id"]) for m in models if m.get("available")]
    known = {str(m["id"]): m for m in models}
    entry = known.get(model)
    if entry is not None:
        runs_on = serves.get(str(entry.get("provider")), (str(entry.get("provider")),))
        if provider is not None:
            if provider in runs_on or provider in ANY_NAME:
                return Choice(model, provider)
            raise TerminalError(
                f"the model {model} runs on {entry.get('provider')}, not {provider}.", EXIT_USAGE
            )
        for name in runs_on:
            if name in configured:
                return Choice(model, name)
        hint = providers.get(str(entry.get("provider")), {}).get("hint") or ""
        raise TerminalError(
            f"no configured provider serves {model} (it runs on {entry.get('provider')}"
            + (f": {hint}" if hint else "")
            + ")."
            + _offer(model, usable),
            EXIT_USAGE,
        )
    if provider is not None:
        return Choice(model, provider)  # a name for the provider to judge
    if default_provider in ANY_NAME and default_provider in configured:
        return Choice(model, None)
    raise TerminalError(
        f"unknown model {model!r}: no configured provider serves it."
        + _offer(model, usable)
        + " A model the catalog does not know needs --provider (e.g. openai-compatible).",
        EXIT_USAGE,
    )


def _offer(model: str, usable: list[str]) -> str:
    near = _nearest(model, usable)
    if near:
        return f" The nearest this server serves: {', '.join(near)}."
    if usable:
        return f" This server serves: {', '.join(usable[:8])}{' …' if len(usable) > 8 else ''}."
    return " This server has no configured provider: set a key (see `tron-server --help`)."


__all__ = ["ANY_NAME", "Choice", "check_choice"]
