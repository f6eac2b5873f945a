"""Every message ``tron acp`` sends, checked against the ACP schema.

Two copies of the schema, both shipped by the protocol's own packages:

- the Python SDK's (``agent-client-protocol``): its pydantic models, generated from the
  protocol's ``schema.json``, as JSON Schema (``model_json_schema``) — always;
- the TypeScript SDK's ``schema/v1/schema.unstable.json`` (``@agentclientprotocol/sdk``
  from npm, installed into the tests' cache) — when npm can install it.

A response is checked against the result type of the request it answers (the checker
remembers each request's method by id), a request or notification against its params
type. ``session/fork``, ``resume`` and ``close`` are in the unstable part of the schema.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from acp import schema as acp_schema
from pydantic import BaseModel

TS_SDK = "@agentclientprotocol/sdk"
INSTALL_TIMEOUT = 300

#: The agent's answer to each client request, by the schema's type names.
RESULTS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/fork": "ForkSessionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}
#: The params of what the agent sends on its own.
PARAMS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
}


def cache_root() -> Path:
    base = os.environ.get("TRON_TESTS_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tron-tests"


@contextlib.contextmanager
def _locked(name: str) -> Iterator[Path]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root


def ts_sdk() -> tuple[Path | None, str]:
    """The TypeScript SDK's folder (installed from npm into the cache if needed), or
    None and why it cannot be had."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, f"{TS_SDK} needs node and npm, which are not installed"
    with _locked("acp-npm") as root:
        folder = root / "acp-npm"
        package = folder / "node_modules" / TS_SDK
        if not (package / "package.json").exists():
            folder.mkdir(parents=True, exist_ok=True)
            try:
                done = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), TS_SDK],
                    capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                return None, f"npm install {TS_SDK} took over {INSTALL_TIMEOUT} s"
            if done.returncode != 0 or not (package / "package.json").exists():
                tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
                return None, f"npm install {TS_SDK} failed: {tail}"
        return package, ""


@cache
def python_schema(name: str) -> dict[str, Any]:
    model = getattr(acp_schema, name)
    assert isinstance(model, type) and issubclass(model, BaseModel), name
    return model.model_json_schema(by_alias=True)


@cache
def ts_schema() -> dict[str, Any] | None:
    package, _ = ts_sdk()
    if package is None:
        return None
    path = package / "schema" / "v1" / "schema.unstable.json"
    return json.loads(path.read_text()) if path.exists() else None


def _validate(value: Any, name: str) -> list[str]:
    errors = [
        f"python-sdk {name}: {e.message} at {list(e.absolute_path)}"
        for e in jsonschema.Draft202012Validator(python_schema(name)).iter_errors(value)
    ]
    full = ts_schema()
    if full is not None:
        one = {"$ref": f"#/$defs/{name}", "$defs": full["$defs"]}
        errors += [
            f"typescript-sdk {name}: {e.message} at {list(e.absolute_path)}"
            for e in jsonschema.Draft202012Validator(one).iter_errors(value)
        ]
    return errors


class Checker:
    """Checks each message from the agent; ``errors`` collects what does not conform.

    ``requested(id, method)`` is told of each request the client sends (an answer may
    be observed before its request is: it waits for it)."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.checked = 0
        self._methods: dict[Any, str] = {}
        self._early: dict[Any, dict[str, Any]] = {}

    def requested(self, request_id: Any, method: str) -> None:
        early = self._early.pop(request_id, None)
        if early is not None:
            self._answer(early, method)
        else:
            self._methods[request_id] = method

    def received(self, message: dict[str, Any]) -> None:
        self.checked += 1
        if message.get("jsonrpc") != "2.0":
            self.errors.append(f"not JSON-RPC 2.0: {message}")
        if "method" in message:
            name = PARAMS.get(message["method"])
            if name is None:
                self.errors.append(f"an agent never sends {message['method']!r}")
                return
            self.errors += _validate(message.get("params"), name)
            return
        method = self._methods.pop(message.get("id"), None)
        if method is None:
            self._early[message.get("id")] = message
        else:
            self._answer(message, method)

    def _answer(self, message: dict[str, Any], method: str) -> None:
        if "error" in message:
            error = message["error"]
            if not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str):
                self.errors.append(f"a malformed error: {message}")
            return
        name = RESULTS.get(method)
        if name is not None:
            self.errors += _validate(message.get("result"), name)

    def finish(self) -> list[str]:
        """Every problem, answers to no request included."""
        return self.errors + [f"an answer to no request: {m}" for m in self._early.values()]


__all__ = ["PARAMS", "RESULTS", "Checker", "ts_sdk"]
