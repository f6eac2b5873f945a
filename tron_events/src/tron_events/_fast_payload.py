"""A payload model's validation and dump, done without pydantic for the common case.

``validate_payload`` runs a payload through its pydantic model and back to a dict
(``model_validate`` then ``model_dump(mode="json", by_alias=True, exclude_unset=True)``):
two thirds of the store's own CPU in a per-commit append once the SQL was lean
(``benchmarks/RESULTS.md`` §12). For a payload whose every value already has the exact
JSON type its field declares, that round trip only copies it, puts the declared
fields first (in declaration order) and the extra keys after them. :func:`plan_for`
derives that copy from a model's fields once; :meth:`Plan.apply` runs it, and answers
:data:`SLOW` whenever a value, a key or the model is anything else (a bool or float
for an int, a snake_case field name, a missing required field, a constraint, a
validator, a type it does not know): pydantic then decides, as before, and its
result or error is what the caller gets. ``tests/events/test_fast_payload.py``
checks the two agree (the same dict, the same JSON text) on generated payloads.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

#: What a check returns for a value it does not vouch for (pydantic decides).
SLOW: Any = object()

_Check = Callable[[Any], Any]


#: A field: its alias, whether it is required, and either the exact type its value
#: must have (and whether it may be None) or a check.
_Field = tuple[str, bool, type | None, bool, _Check | None]


class Plan:
    """The fields of one model, in declaration order."""

    __slots__ = ("aliases", "fields", "names")

    def __init__(self, fields: list[_Field], names: frozenset[str]) -> None:
        self.fields = fields
        self.aliases = frozenset(f[0] for f in fields)
        #: Field names that are not aliases: pydantic reads them too (populate_by_name).
        self.names = names - self.aliases

    def apply(self, d: dict[str, Any]) -> Any:
        """The model's dump of ``d`` (a fresh JSON value: its containers may be
        reused), or :data:`SLOW`. That is ``d`` itself when the dump would hold the
        same values in the same key order (then ``d``'s JSON text is the dump's)."""
        out: dict[str, Any] = {}
        keys = iter(d)
        same = True
        for alias, required, kind, nullable, check in self.fields:
            if alias in d:
                value = d[alias]
                if kind is not None:  # the common case, without a call
                    if type(value) is not kind and (value is not None or not nullable):
                        return SLOW
                else:
                    checked = check(value)  # type: ignore[misc]
                    if checked is SLOW:
                        return SLOW
                    if checked is not value:
                        same = False
                        value = checked
                if same and next(keys) != alias:
                    same = False
                out[alias] = value
            elif required:
                return SLOW
        if same:
            # The fields came first, in order, unchanged: the extras follow in d's order.
            for key in keys:
                if key in self.names:
                    return SLOW
            return d
        if len(out) != len(d):
            aliases, names = self.aliases, self.names
            for key, value in d.items():
                if key not in aliases:
                    if key in names:
                        return SLOW
                    out[key] = value  # an extra key, kept as it is (extra="allow")
        return out


_PLANS: dict[type[BaseModel], Plan | None] = {}
_BASE_CONFIG = {"extra": "allow", "populate_by_name": True, "frozen": True}


def plan_for(model: type[BaseModel]) -> Plan | None:
    """The model's plan (None: the model is not one this module can copy)."""
    try:
        return _PLANS[model]
    except KeyError:
        pass
    plan = _derive(model, set())
    _PLANS[model] = plan
    return plan


def _derive(model: type[BaseModel], seen: set[type[BaseModel]]) -> Plan | None:
    if model in seen:
        return None  # a recursive model: pydantic's
    config = model.model_config
    if any(config.get(k) != v for k, v in _BASE_CONFIG.items()) or any(
        k in config for k in ("strict", "str_strip_whitespace", "str_to_lower", "str_to_upper",
                              "str_max_length", "str_min_length", "coerce_numbers_to_str")
    ):  # fmt: skip
        return None
    decorators = model.__pydantic_decorators__
    if any(
        (
            decorators.validators,
            decorators.field_validators,
            decorators.root_validators,
            decorators.field_serializers,
            decorators.model_serializers,
            decorators.model_validators,
            decorators.computed_fields,
        )
    ):
        return None
    fields: list[_Field] = []
    for info in model.model_fields.values():
        if (
            info.metadata
            or info.alias is None
            or info.exclude
            or info.validation_alias not in (None, info.alias)
            or info.serialization_alias not in (None, info.alias)
        ):
            return None
        simple = _simple(info.annotation)
        if simple is not None:
            fields.append((info.alias, info.is_required(), simple[0], simple[1], None))
            continue
        check = _check_for(info.annotation, seen | {model})
        if check is None:
            return None
        fields.append((info.alias, info.is_required(), None, False, check))
    return Plan(fields, frozenset(model.model_fields))


def _simple(annotation: Any) -> tuple[type, bool] | None:
    """(the exact type, whether None is allowed) when that is all ``annotation`` asks."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        if len(args) != 2 or type(None) not in args:
            return None
        other = args[0] if args[1] is type(None) else args[1]
        simple = _simple(other)
        return None if simple is None else (simple[0], True)
    if annotation in (str, int, bool):
        return annotation, False
    origin = typing.get_origin(annotation)
    if annotation is list or (origin is list and args in ((Any,), ())):
        return list, False
    if annotation is dict or (origin is dict and args in ((str, Any), ())):
        return dict, False
    return None


def _exact(kind: type) -> _Check:
    def check(v: Any) -> Any:
        return v if type(v) is kind else SLOW

    return check


def _any(v: Any) -> Any:
    return v


def _float(v: Any) -> Any:
    kind = type(v)
    if kind is float:
        return v
    return float(v) if kind is int else SLOW


def _check_for(
    annotation: Any, seen: set[type[BaseModel]], in_union: bool = False
) -> _Check | None:
    """A check of a value against ``annotation``, for the annotations payload models
    use (None: one it does not know)."""
    if annotation is Any:
        return _any
    if annotation in (str, int, bool):
        return _exact(annotation)
    if annotation is float:
        # An int becomes a float, except in a union (another member may take it).
        return _exact(float) if in_union else _float
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is list or (origin is list and args in ((Any,), ())):
        return _exact(list)
    if annotation is dict or (origin is dict and args in ((str, Any), ())):
        return _exact(dict)
    if origin is Literal:
        if not all(type(a) is str for a in args):
            return None
        allowed = frozenset(args)
        return lambda v: v if type(v) is str and v in allowed else SLOW
    if origin is list and len(args) == 1:
        item = _check_for(args[0], seen)
        if item is None:
            return None
        return lambda v: _each(v, item)
    if origin in (typing.Union, types.UnionType):
        optional = type(None) in args
        checks = [_check_for(a, seen, in_union=True) for a in args if a is not type(None)]
        if any(c is None for c in checks) or len(checks) > 2:
            return None
        return _union(optional, checks)  # type: ignore[arg-type]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        plan = _derive(annotation, seen)
        if plan is None:
            return None
        return lambda v: plan.apply(v) if type(v) is dict else SLOW
    return None


def _each(v: Any, item: _Check) -> Any:
    if type(v) is not list:
        return SLOW
    out = []
    for x in v:
        y = item(x)
        if y is SLOW:
            return SLOW
        out.append(y)
    return out


def _union(optional: bool, checks: list[_Check]) -> _Check:
    # pydantic's smart union takes an exact type match first: with the exact-type
    # checks above, the first check that vouches gives the same value. Two
    # members that could both vouch differently (a float after an int) are
    # not among the payload models' unions; anything else is SLOW.
    def check(v: Any) -> Any:
        if v is None:
            return None if optional else SLOW
        for c in checks:
            y = c(v)
            if y is not SLOW:
                return y
        return SLOW

    return check
