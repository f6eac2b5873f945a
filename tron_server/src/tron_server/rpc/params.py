"""The base class of method params: camelCase on the wire, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Params(BaseModel):
    """Base of every method's params model.

    Fields are snake_case in Python and camelCase on the wire
    (``session_id`` ↔ ``sessionId``); unknown keys are refused so that a typo
    is an error rather than a silently ignored option.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        extra="forbid",
        frozen=True,
        # Each model's validator is built at its first use, not when the methods are
        # imported: the server's start imports ~40 params models; a first turn uses 4.
        defer_build=True,
    )


class NoParams(Params):
    """For methods that take no params (``{}`` or none at all)."""


__all__ = ["NoParams", "Params"]
