"""The method registry: each method with its params model, the services it needs,
and a description.

    registry = MethodRegistry()

    @registry.method("session.get", SessionGetParams, description="One session.")
    async def get(ctx: RpcContext, params: SessionGetParams) -> dict[str, Any]:
        ...
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InvalidParams, ManagerUnavailableError
from .context import RpcContext

P = TypeVar("P", bound=BaseModel)
Handler = Callable[[RpcContext, Any], Awaitable[Any]]
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One registered method."""

    name: str
    params: type[BaseModel]
    handler: Handler
    description: str
    needs: tuple[str, ...]

    def parse_params(self, raw: object) -> BaseModel:
        """Validate raw JSON params; field errors become -32602 with ``data.errors``."""
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InvalidParams(
                f"{self.name}: params must be an object with named fields",
                {"errors": [{"field": "", "message": "expected an object", "type": "type"}]},
            )
        try:
            return self.params.model_validate(raw)
        except ValidationError as exc:
            errors = field_errors(exc)
            raise InvalidParams(params_message(errors), {"errors": errors}) from None

    def check_needs(self, ctx: RpcContext) -> None:
        """-32002 when a service the method needs is not running."""
        for need in self.needs:
            if getattr(ctx.services, need, None) is None:
                raise ManagerUnavailableError(
                    f"{self.name} needs the {need}, which is not available in this server"
                )


def field_errors(exc: ValidationError) -> list[dict[str, str]]:
    """Pydantic errors as ``[{field, message, type}]`` with dotted camelCase paths.

    A validator's own reason is given as is (pydantic's "Value error, " prefix dropped).
    """
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in err["loc"])
        message = err["msg"]
        if err["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        out.append({"field": field, "message": message, "type": err["type"]})
    return out


def params_message(errors: list[dict[str, str]]) -> str:
    """The -32602 message: the first field's reason, and how many more there are.

    ``workingDirectory: must be an existing directory`` — what a client shows as is.
    """
    if not errors:
        return "invalid params"
    first = errors[0]
    message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
    more = len(errors) - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''} in data.errors)"
    return message


class MethodRegistry:
    """Methods by name. Method modules fill it through ``register(registry)``."""

    def __init__(self) -> None:
        self._methods: dict[str, MethodSpec] = {}

    def method(
        self,
        name: str,
        params: type[BaseModel],
        *,
        description: str,
        needs: tuple[str, ...] = ("store",),
    ) -> Callable[[H], H]:
        """Register ``async def handler(ctx, params)`` as ``name``."""

        def decorate(handler: H) -> H:
            self.add(MethodSpec(name, params, handler, description, tuple(needs)))
            return handler

        return decorate

    def add(self, spec: MethodSpec) -> None:
        if spec.name in self._methods:
            raise ValueError(f"method {spec.name!r} is registered twice")
        self._methods[spec.name] = spec

    def wrap(self, name: str, wrapper: Callable[[Handler], Handler]) -> None:
        """Put ``wrapper(handler)`` in place of method ``name``'s handler (same params,
        needs and description): how a package above the methods extends one of them
        (the slash commands route ``agent.message``) without the method importing it."""
        spec = self._methods.get(name)
        if spec is None:
            raise ValueError(f"method {name!r} is not registered: register it before wrapping")
        self._methods[name] = replace(spec, handler=wrapper(spec.handler))

    def get(self, name: str) -> MethodSpec | None:
        return self._methods.get(name)

    async def call(self, ctx: RpcContext, method: str, params: object) -> Any:
        """Run method ``method`` as if a client had called it (params checked, needs too)."""
        spec = self._methods.get(method)
        if spec is None:
            raise ManagerUnavailableError(f"this server has no {method} method")
        spec.check_needs(ctx)
        return await spec.handler(ctx, spec.parse_params(params))

    def names(self) -> list[str]:
        return sorted(self._methods)

    def __iter__(self) -> Iterator[MethodSpec]:
        return iter(self._methods.values())

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def describe(self) -> list[dict[str, Any]]:
        """Name, description, needs and params JSON schema of every method."""
        return [
            {
                "name": spec.name,
                "description": spec.description,
                "needs": list(spec.needs),
                "params": spec.params.model_json_schema(by_alias=True),
            }
            for spec in sorted(self._methods.values(), key=lambda s: s.name)
        ]


__all__ = [
    "Handler",
    "MethodRegistry",
    "MethodSpec",
    "RpcContext",
    "field_errors",
    "params_message",
]
