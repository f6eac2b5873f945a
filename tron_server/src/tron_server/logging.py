"""Logs: one line per record on stderr (JSON or text) and in a rotating file.

    configure_logging("info", log_file=home / "logs" / "tron-server.log")

Every logger of the process goes through the same handlers (the root logger's):
ours, uvicorn's, websockets' (uvicorn hands it ``uvicorn.error``), httpx's.
``--log-level`` sets ours (``tron_server``, ``tron_events``, ``tron_llm``,
``uvicorn``); other libraries log from WARNING up, whatever the level (at
DEBUG, SQLAlchemy would log every statement with its parameters: the
users' messages).

**No secret reaches a log line.** Every handler's formatter passes its final
text through :data:`REDACTOR`, which removes the secrets the process knows (the
server token, the login cookie, one-time login codes, provider API keys from
the environment: registered with :func:`add_secret`) and anything shaped like
a credential (``?token=…``, ``Authorization: Bearer …``, ``tron_session=…``,
``x-api-key: …``, a password in a URL). uvicorn's access log also drops query
strings altogether. Records may carry ``extra={"fields": {...}}``; those keys
are merged into the JSON line (and shown as ``key=value`` in text).

The file (default ``~/.tron/logs/tron-server.log``, JSON lines, 10 MB × 5) is
user-only (0600, its folder 0700) from the moment it is created. Servers that
share a home share it too, safely (each line is written, and the file rotated,
under a lock, ``tron-server.log.lock``); its lines carry the writer's ``pid``. On stderr an
exception is one line (type and message); its traceback goes only to the file.
"""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
import re
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from .folders import private_dir

LEVELS = ("critical", "error", "warning", "info", "debug")
FORMATS = ("json", "text")

#: The loggers ``--log-level`` applies to; every other logger logs from WARNING up.
OWN_LOGGERS = ("tron_server", "tron_events", "tron_llm", "uvicorn")

LOG_FILE_BYTES = 10 * 1024 * 1024
LOG_FILE_BACKUPS = 5
REDACTED = "[redacted]"

#: Environment variables whose values are secrets (provider keys and the like).
_SECRET_ENV = re.compile(r"(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$|^TRON_.*KEY$")

# Values stop at a backslash too: in a JSON line, the quote after a value is escaped.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # A credential in a query string: ?token=…, &code=…, ?key=… (Gemini), api_key=…
    (
        re.compile(
            r"([?&](?:token|code|key|api[_-]?key|access_token|password)=)[^&\s\"'#\\]+", re.I
        ),
        r"\1" + REDACTED,
    ),
    # Authorization: Bearer …, Basic …
    (re.compile(r"\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}", re.I), r"\1\2" + REDACTED),
    # Our login cookie (an HMAC of the token: a credential too).
    (re.compile(r"(tron_session=)[^;\s\"'\\]+"), r"\1" + REDACTED),
    # Provider key headers, as websockets/httpx might print them.
    (
        re.compile(
            r"((?:x-api-key|x-goog-api-key|api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;\\]+", re.I
        ),
        r"\1" + REDACTED,
    ),
    # A password in a URL: scheme://user:password@host
    (
        re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s\"'\\]+:)[^@\s\"'/\\]+@", re.I),
        r"\1" + REDACTED + "@",
    ),
)


class Redactor:
    """Removes secrets from text: the known values, then credential-shaped text."""

    def __init__(self) -> None:
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add(self, *secrets: str | None) -> None:
        """Redact these values from now on (values shorter than 8 characters are
        ignored: too likely to match ordinary text, too short to be a credential)."""
        with self._lock:
            known = set(self._secrets)
            known.update(s for s in secrets if s and len(s) >= 8)
            # Longest first, so a secret containing another is removed whole.
            self._secrets = tuple(sorted(known, key=len, reverse=True))

    def discard(self, secret: str) -> None:
        with self._lock:
            self._secrets = tuple(s for s in self._secrets if s != secret)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text


#: The process's redactor: every handler :func:`configure_logging` installs uses it.
REDACTOR = Redactor()


def add_secret(*secrets: str | None) -> None:
    """Never log these values (the server token, cookies, login codes, keys)."""
    REDACTOR.add(*secrets)


def secrets_from_environment(environ: dict[str, str] | None = None) -> list[str]:
    """The values of the environment variables that hold secrets (``*_API_KEY`` …)."""
    env = os.environ if environ is None else environ
    return [value for name, value in env.items() if _SECRET_ENV.search(name) and value]


def _timestamp(record: logging.LogRecord) -> str:
    return (
        datetime.fromtimestamp(record.created, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", "pid"?, ...fields, "exc"?}`` per record,
    redacted.

    ``tracebacks=False`` shortens an exception to its type and message.
    """

    def __init__(
        self, *, tracebacks: bool = True, redactor: Redactor = REDACTOR, pid: bool = False
    ) -> None:
        super().__init__()
        self.tracebacks = tracebacks
        self.redactor = redactor
        #: Add the writing process's ``pid`` (a file several servers share).
        self.pid = pid

    def format(self, record: logging.LogRecord) -> str:
        redact = self.redactor.redact
        line: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(self._message(record)),
        }
        if self.pid:
            line["pid"] = record.process
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            # Each value before encoding (a secret with characters JSON escapes would
            # otherwise survive, escaped), and the whole line after.
            line.update({k: redact(v) if isinstance(v, str) else v for k, v in fields.items()})
        if record.exc_info:
            line["exc"] = redact(_exception_text(self, record, self.tracebacks))
        return redact(orjson.dumps(line, default=str).decode())

    def _message(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        return message if self.tracebacks else _without_traceback(message)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger: message key=value …`` per record, redacted."""

    def __init__(self, *, tracebacks: bool = True, redactor: Redactor = REDACTOR) -> None:
        super().__init__()
        self.tracebacks = tracebacks
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if not self.tracebacks:
            message = _without_traceback(message)
        text = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {message}"
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and fields:
            text += " " + " ".join(f"{k}={_field_text(v)}" for k, v in fields.items())
        if record.exc_info:
            text += "\n" + _exception_text(self, record, self.tracebacks)
        return self.redactor.redact(text)


def _field_text(value: object) -> str:
    return value if isinstance(value, str) and value and " " not in value else repr(value)


def _exception_text(fmt: logging.Formatter, record: logging.LogRecord, full: bool) -> str:
    assert record.exc_info is not None
    if full:
        return fmt.formatException(record.exc_info)
    exc = record.exc_info[1]
    return f"{type(exc).__name__}: {exc}" if exc is not None else "exception"


_TRACEBACK = "Traceback (most recent call last):"


def _without_traceback(message: str) -> str:
    """A message that holds a formatted traceback (starlette hands uvicorn one when
    the lifespan is cut short), shortened to its text before it and its last line."""
    if _TRACEBACK not in message:
        return message
    head = message.split(_TRACEBACK, 1)[0].strip()
    last = [line for line in message.splitlines() if line.strip()][-1].strip()
    return f"{head} {last}".strip() + " (traceback in the log file)"


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file created user-only (0600) whatever the umask, rotation included,
    that several processes may share (two servers on one home).

    Each record is written under an exclusive lock (``flock`` of ``<file>.lock``): the
    size check, the rotation and the write happen as one step for all processes, and
    a process whose file was rotated by another reopens the new one first. Without
    this, a rotation by one server left the other writing into ``.1`` (and on into
    the file that falls off the end), or both rotated, and lines were lost."""

    def __init__(self, filename: Path, **kwargs: Any) -> None:
        super().__init__(filename, **kwargs)
        lock = os.open(f"{self.baseFilename}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(lock, 0o600)
        self._lock_fd: int | None = lock

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)  # an older file, or one created under another umask
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        lock = self._lock_fd
        if lock is None:  # closed
            return
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._follow_rotation()
                if self.shouldRollover(record):
                    self.doRollover()
                logging.FileHandler.emit(self, record)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        except Exception:
            self.handleError(record)

    def _follow_rotation(self) -> None:
        """Reopen the file if another process rotated it (the name is another file now)."""
        if self.stream is None:
            return
        try:
            same = os.stat(self.baseFilename).st_ino == os.fstat(self.stream.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            self.stream.close()
            self.stream = self._open()

    def close(self) -> None:
        self.acquire()
        try:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
        finally:
            self.release()
        super().close()


class _NoQueryString(logging.Filter):
    """uvicorn's access log, without query strings (they may carry credentials)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path = args[2].split("?", 1)[0]
            record.args = (*args[:2], path, *args[3:])
        return True


class _NoFrameContents(logging.Filter):
    """websockets' debug lines show each frame's first and last bytes: the
    conversation (and any secret in it, cut where no redaction can recognise it).
    Keep the frame's kind and size only."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg in ("< %s", "> %s") and isinstance(args, tuple) and len(args) == 1:
            frame = args[0]
            opcode = getattr(frame, "opcode", None)
            data = getattr(frame, "data", None)
            if (
                opcode is not None
                and data is not None
                and opcode.name in ("TEXT", "BINARY", "CONT")
            ):
                record.args = (f"{opcode.name} [{len(data)} bytes]",)
        return True


class _HeldStderr(logging.handlers.MemoryHandler):
    """stderr's handler while the server starts: records below WARNING wait (a warning
    lets them all out, in order) until :func:`release_stderr`."""

    def shouldFlush(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.flushLevel


def configure_logging(
    level: str = "info",
    *,
    log_file: Path | None = None,
    fmt: str = "json",
    hold_stderr: bool = False,
) -> None:
    """Send every log record of the process to stderr (``fmt``: json or text) and, with
    ``log_file``, to that rotating file (JSON, full tracebacks), all redacted.

    ``hold_stderr``: stderr gets the records below WARNING only at :func:`release_stderr`
    (the file gets them at once), so that a start that fails can say one line."""
    numeric = logging.getLevelName(level.upper())
    add_secret(*secrets_from_environment())
    stderr: logging.Handler = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(
        TextFormatter(tracebacks=False) if fmt == "text" else JsonFormatter(tracebacks=False)
    )
    if hold_stderr:
        stderr = _HeldStderr(capacity=0, flushLevel=logging.WARNING, target=stderr)
    handlers: list[logging.Handler] = [stderr]
    if log_file is not None:
        private_dir(log_file.parent)
        file_handler = _PrivateRotatingFileHandler(
            log_file, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
        file_handler.setFormatter(JsonFormatter(tracebacks=True, pid=True))
        handlers.append(file_handler)
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(max(numeric, logging.WARNING))
    for name in (*OWN_LOGGERS, "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
        logger.setLevel(numeric)
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _NoQueryString) for f in access.filters):
        access.addFilter(_NoQueryString())
    # uvicorn hands "uvicorn.error" to websockets, which logs frames there.
    protocol = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _NoFrameContents) for f in protocol.filters):
        protocol.addFilter(_NoFrameContents())


def release_stderr(*, drop: bool = False) -> None:
    """End :func:`configure_logging`'s ``hold_stderr``: the records held go to stderr (or,
    with ``drop``, only stay in the log file) and the next ones go straight there."""
    root = logging.getLogger()
    for handler in root.handlers[:]:
        if isinstance(handler, _HeldStderr):
            target = handler.target
            if drop:
                handler.buffer.clear()
            handler.flush()
            root.removeHandler(handler)
            if target is not None:
                root.addHandler(target)


__all__ = [
    "FORMATS",
    "LEVELS",
    "REDACTOR",
    "JsonFormatter",
    "Redactor",
    "TextFormatter",
    "add_secret",
    "configure_logging",
    "private_dir",
    "release_stderr",
    "secrets_from_environment",
]
