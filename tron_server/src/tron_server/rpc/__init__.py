"""JSON-RPC 2.0: the method registry, the dispatcher and the middleware chain."""

from __future__ import annotations

from .context import RpcContext
from .dispatch import Dispatcher
from .frames import JsonText, events_json, notification_frame
from .params import NoParams, Params
from .registry import MethodRegistry, MethodSpec

__all__ = [
    "Dispatcher",
    "JsonText",
    "MethodRegistry",
    "MethodSpec",
    "NoParams",
    "Params",
    "RpcContext",
    "events_json",
    "notification_frame",
]
