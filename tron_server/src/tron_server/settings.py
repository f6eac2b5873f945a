"""Server settings, read from ``TRON_*`` environment variables and the CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The providers tron_llm has (``tron_llm.registry.PROVIDERS``; a test keeps the two
#: equal): named here so that reading the settings does not import tron_llm, which
#: would cost the server's first answer tens of milliseconds.
KNOWN_PROVIDERS = frozenset(
    {"anthropic", "openai", "openai-responses", "google", "openai-compatible"}
)


def _default_home() -> Path:
    return Path.home() / ".tron"


class Settings(BaseSettings):
    """Everything the server needs to start.

    ``database_url`` None means SQLite at ``home/database/prod.db``, created and
    migrated on start. The ``*_base_url`` fields override provider endpoints
    (tests point ``anthropic_base_url`` at a scripted LLM).
    """

    model_config = SettingsConfigDict(env_prefix="TRON_", extra="ignore")

    home: Path = Field(default_factory=_default_home)
    host: str = "127.0.0.1"
    port: int = 8420
    database_url: str | None = None
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    log_format: Literal["json", "text"] = "json"
    allow_remote: bool = False
    default_provider: str = "anthropic"
    default_model: str = "claude-sonnet-4-5"
    anthropic_base_url: str | None = None
    openai_base_url: str | None = None
    google_base_url: str | None = None
    openai_compatible_base_url: str | None = None
    #: The key an OpenAI-compatible server wants (OpenRouter, a hosted vLLM): sent only
    #: there (TRON_OPENAI_COMPATIBLE_API_KEY; OPENAI_API_KEY is never sent there).
    openai_compatible_api_key: str | None = Field(default=None, repr=False)
    auto_compact_threshold: float = 0.8
    #: Task calls of one assistant message that run at once (TRON_SUBAGENT_MAX_PARALLEL).
    subagent_max_parallel: int = Field(default=4, ge=1, le=64)
    #: How deep sub-agents nest: 1 = only sessions a user started get the Task tool.
    subagent_max_depth: int = Field(default=1, ge=0, le=8)
    #: File contents above this size are recorded by hash only: a rewind cannot restore
    #: them (TRON_WORKSPACE_MAX_FILE_BYTES).
    workspace_max_file_bytes: int = Field(default=10 * 1024 * 1024, ge=0)
    #: Snapshot the working directory around each Bash command to record what it
    #: changed (TRON_WORKSPACE_RECORD_COMMANDS).
    workspace_record_commands: bool = True
    #: Folders with more files than this (not ignored) are not snapshotted: a session
    #: in a home folder must not copy it (TRON_WORKSPACE_MAX_FILES).
    workspace_max_files: int = Field(default=100_000, ge=0)
    #: Seconds a question or an approval waits for the user (TRON_ASK_TIMEOUT; None or 0:
    #: until answered, the turn is aborted or the server stops).
    ask_timeout: float | None = Field(default=None, ge=0)
    #: Whether sessions may use the bypassPermissions mode (TRON_ALLOW_BYPASS_PERMISSIONS).
    allow_bypass_permissions: bool = False
    #: The mode of a session that recorded none and whose settings set no defaultMode
    #: (TRON_DEFAULT_PERMISSION_MODE; bypassPermissions only with allow_bypass_permissions).
    default_permission_mode: Literal[
        "default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"
    ] = "default"
    #: Claude Code's ``~/.claude.json`` (its MCP servers, user and local scope); None: the
    #: default (``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``) (TRON_CLAUDE_JSON).
    claude_json: Path | None = None
    #: Let MCP servers ask the model (sampling/createMessage) (TRON_MCP_SAMPLING); off:
    #: refused with an error the server sees.
    mcp_sampling: bool = False
    #: Seconds a run waits for an MCP server never listed before (its first start) before
    #: it goes on without that server's tools (TRON_MCP_LIST_WAIT).
    mcp_list_wait: float = Field(default=10.0, ge=0)
    #: The Chromium the Browser tool drives (TRON_CHROMIUM_PATH; a path or a name on PATH).
    chromium_path: str = "/usr/bin/chromium"
    #: Seconds a run lease holds without renewal when several servers share a PostgreSQL
    #: database (TRON_CLUSTER_LEASE_SECONDS): a dead server's sessions are taken over
    #: within this plus a second (docs/deploy.md).
    cluster_lease_seconds: float = Field(default=6.0, gt=0, le=300)
    max_frame_bytes: int = 4 * 1024 * 1024
    outgoing_queue_limit: int = 10_000
    #: Bytes a connection may hold for its client (queued or being sent) before
    #: it is closed with 4008; a single bigger frame still goes when nothing waits.
    outgoing_budget_bytes: int = 64 * 1024 * 1024

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        # TRON_LOG_LEVEL=DEBUG means what --log-level debug means.
        return value.lower() if isinstance(value, str) else value

    @field_validator("default_provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        # A misspelt TRON_DEFAULT_PROVIDER stops the start, not every new session's
        # first message.
        if value not in KNOWN_PROVIDERS:
            known = ", ".join(sorted(KNOWN_PROVIDERS))
            raise ValueError(f"unknown provider {value!r}; the known providers are {known}")
        return value

    @property
    def token_path(self) -> Path:
        """Where the token is kept across restarts (mode 0600)."""
        return self.home / "server-token"

    @property
    def log_path(self) -> Path:
        """The rotating log file (JSON lines, mode 0600)."""
        return self.home / "logs" / "tron-server.log"

    def resolved_claude_json(self) -> Path:
        """Claude Code's user configuration file this server reads."""
        if self.claude_json is not None:
            return self.claude_json.expanduser()
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home()) / ".claude.json"

    def resolved_database_url(self) -> str:
        """The database URL to open: the configured one, or SQLite under ``home``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.home / 'database' / 'prod.db'}"


__all__ = ["Settings"]
