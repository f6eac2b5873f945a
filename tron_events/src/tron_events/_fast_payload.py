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


#: A field: its alias, whether it is required, and either the exact types its value
#: may have (``NoneType`` among them when it may be None) or a check.
_Field = tuple[str, bool, frozenset[type] | None, _Check | None]


class Plan:
    """The fields of one model, in declaration order, and :meth:`apply`."""

    __slots__ = ("aliases", "apply", "fields", "maybe_flat", "names")

    def __init__(self, fields: list[_Field], names: frozenset[str]) -> None:
        self.fields = fields
        self.aliases = frozenset(f[0] for f in fields)
        #: Field names that are not aliases: pydantic reads them too (populate_by_name).
        self.names = names - self.aliases
        #: Whether a payload of only strings, ints, bools and None can be valid (no
        #: required field must be a list or an object).
        self.maybe_flat = not any(
            required and kinds is not None and kinds <= {list, dict}
            for _, required, kinds, _ in fields
        )
        #: ``apply(d)``: the model's dump of ``d`` (a fresh JSON value: its containers
        #: may be reused), or :data:`SLOW`. That is ``d`` itself when the dump would
        #: hold the same values in the same key order (then ``d``'s JSON text is the
        #: dump's). Compiled for the fields (see :func:`_compile`).
        self.apply: Callable[[dict[str, Any]], Any] = _compile(self)


def _compile(plan: Plan) -> Callable[[dict[str, Any]], Any]:
    """``plan.apply`` as the straight-line code of its fields (a loop over the field
    tuples was half the validation's time in an append, ``benchmarks/RESULTS.md`` §13).

    For each field, in declaration order: absent, it is SLOW if required; present, its
    value must have one of its exact types (or pass its check, which may return a
    new value; a nested model's fields are checked in line, the same way). ``same``
    stays true while ``d``'s keys begin with the fields present, in order, with the
    values unchanged: then ``d`` itself is the dump (its extra keys follow, none a
    field's own name). Otherwise :func:`_rebuild` makes the dump."""
    env: dict[str, Any] = {
        "SLOW": SLOW, "NoneType": type(None), "REBUILD": lambda d: _rebuild(plan, d),
    }  # fmt: skip
    lines = ["def apply(d):"]
    _emit(plan, "", env, lines, "    ")
    lines += ["    if same:", "        return d", "    return REBUILD(d)"]
    exec("\n".join(lines), env)  # code made from the model's own fields
    apply: Callable[[dict[str, Any]], Any] = env["apply"]
    return apply


def _emit(plan: Plan, at: str, env: dict[str, Any], lines: list[str], pad: str) -> None:
    """The checks of ``plan``'s fields on the dict ``d{at}``, leaving ``same{at}``
    (whether that dict is its own dump) after checking its extra keys' names."""
    d, ks, n, same = f"d{at}", f"ks{at}", f"n{at}", f"same{at}"
    lines += [f"{pad}{ks} = list({d})", f"{pad}{n} = 0", f"{pad}{same} = True"]
    for i, (alias, required, kinds, check) in enumerate(plan.fields):
        key = repr(alias)
        lines += [f"{pad}if {key} in {d}:"]
        body = pad + "    "
        nested = None if check is None else _NESTED.get(check)
        if kinds is not None:
            names = sorted(_TYPE_NAMES[k] for k in kinds)
            if len(names) == 1:
                lines += [f"{body}if type({d}[{key}]) is not {names[0]}:"]
            else:
                tests = " and ".join(f"t is not {name}" for name in names)
                lines += [f"{body}t = type({d}[{key}])", f"{body}if {tests}:"]
            lines += [f"{body}    return SLOW"]
        elif nested is not None:
            inner, optional = nested
            sub = f"{at}_{i}"
            env[f"A{sub}"] = inner.apply
            lines += [f"{body}d{sub} = {d}[{key}]"]
            if optional:
                lines += [f"{body}if d{sub} is None:", f"{body}    pass"]
                lines += [f"{body}elif type(d{sub}) is not dict:", f"{body}    return SLOW"]
            else:
                lines += [f"{body}if type(d{sub}) is not dict:", f"{body}    return SLOW"]
            lines += [f"{body}else:"]
            _emit(inner, sub, env, lines, body + "    ")
            lines += [
                f"{body}    if not same{sub}:",  # its dump is another dict: its own apply's
                f"{body}        if A{sub}(d{sub}) is SLOW:",
                f"{body}            return SLOW",
                f"{body}        {same} = False",
            ]
        else:
            env[f"C{at}_{i}"] = check
            lines += [
                f"{body}v = {d}[{key}]",
                f"{body}w = C{at}_{i}(v)",
                f"{body}if w is not v:",
                f"{body}    if w is SLOW:",
                f"{body}        return SLOW",
                f"{body}    {same} = False",
            ]
        # (once same is false, the comparison is wasted, but the common case saves the test)
        lines += [f"{body}if {ks}[{n}] != {key}:", f"{body}    {same} = False", f"{body}{n} += 1"]
        if required:
            lines += [f"{pad}else:", f"{pad}    return SLOW"]
    if plan.names:
        env[f"NAMES{at}"] = plan.names
        lines += [
            f"{pad}if {same}:",
            f"{pad}    for key in {ks}[{n}:]:",
            f"{pad}        if key in NAMES{at}:",
            f"{pad}            return SLOW",
        ]


def _rebuild(plan: Plan, d: dict[str, Any]) -> Any:
    """The dump of ``d``, whose fields ``plan.apply`` found valid but out of order or
    changed by their checks: the fields in declaration order (checked again: the
    checks give the values the dump holds), then the extra keys in ``d``'s order."""
    out: dict[str, Any] = {}
    for alias, _required, kinds, check in plan.fields:
        if alias in d:
            value = d[alias]
            if check is not None:
                value = check(value)
                if value is SLOW:
                    return SLOW
            elif type(value) not in kinds:  # type: ignore[operator]
                return SLOW
            out[alias] = value
    if len(out) != len(d):
        aliases, names = plan.aliases, plan.names
        for key, value in d.items():
            if key not in aliases:
                if key in names:
                    return SLOW
                out[key] = value  # an extra key, kept as it is (extra="allow")
    return out


_TYPE_NAMES = {
    str: "str", int: "int", bool: "bool", float: "float", list: "list", dict: "dict",
    type(None): "NoneType",
}  # fmt: skip


_PLANS: dict[type[BaseModel], Plan | None] = {}
#: The checks of a nested model's values (optional or not), and its plan: the
#: enclosing plan's code checks its fields in line (see :func:`_emit`).
_NESTED: dict[_Check, tuple[Plan, bool]] = {}
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
        kinds = _simple(info.annotation)
        if kinds is not None:
            fields.append((info.alias, info.is_required(), kinds, None))
            continue
        check = _check_for(info.annotation, seen | {model})
        if check is None:
            return None
        fields.append((info.alias, info.is_required(), None, check))
    return Plan(fields, frozenset(model.model_fields))


def _simple(annotation: Any) -> frozenset[type] | None:
    """The exact types a value may have (``NoneType`` for None) when that is all
    ``annotation`` asks: one of ``str``, ``int``, ``bool``, ``list[Any]``, ``dict[str,
    Any]``, or a union of them (a float only in a union: alone, an int becomes one)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        # pydantic's smart union keeps a value whose type is exactly a member's.
        kinds: set[type] = set()
        for arg in args:
            if arg is type(None) or arg is float:
                kinds.add(arg)
                continue
            simple = _simple(arg)
            if simple is None:
                return None
            kinds |= simple
        return frozenset(kinds)
    if annotation in (str, int, bool):
        return frozenset({annotation})
    origin = typing.get_origin(annotation)
    if annotation is list or (origin is list and args in ((Any,), ())):
        return frozenset({list})
    if annotation is dict or (origin is dict and args in ((str, Any), ())):
        return frozenset({dict})
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
        members = [a for a in args if a is not type(None)]
        if optional and len(members) == 1 and _is_model(members[0]):
            # An optional nested model (a message's token usage): one call fewer.
            plan = _derive(members[0], seen)
            if plan is None:
                return None
            apply = plan.apply

            def optional_model(v: Any) -> Any:
                return None if v is None else apply(v) if type(v) is dict else SLOW

            _NESTED[optional_model] = (plan, True)
            return optional_model
        checks = [_check_for(a, seen, in_union=True) for a in members]
        if any(c is None for c in checks) or len(checks) > 2:
            return None
        return _union(optional, checks)  # type: ignore[arg-type]
    if _is_model(annotation):
        plan = _derive(annotation, seen)
        if plan is None:
            return None

        def model(v: Any) -> Any:
            return plan.apply(v) if type(v) is dict else SLOW

        _NESTED[model] = (plan, False)
        return model
    return None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


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
