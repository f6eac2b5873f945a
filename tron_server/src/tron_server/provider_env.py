"""Which provider environment a process has: the variables that choose a provider's
key and endpoint, as a fingerprint two processes can compare.

A background tron-server keeps the environment of the ``tron`` that started it. When
the user later sets a key or an endpoint in their shell, the server does not see it;
the server records its fingerprint (in ``server.json``) and ``tron`` compares its own
with it, to say so and how to restart. Keys are never written: a key's fingerprint is
a short hash of it (enough to tell two keys apart, not to recover one); endpoints and
defaults are written as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

#: Variables whose values are secrets: fingerprinted, never written.
KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "TRON_OPENAI_COMPATIBLE_API_KEY",
)
#: Variables written as they are (endpoints and defaults).
PLAIN_VARIABLES = (
    "TRON_ANTHROPIC_BASE_URL",
    "TRON_OPENAI_BASE_URL",
    "TRON_GOOGLE_BASE_URL",
    "TRON_OPENAI_COMPATIBLE_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "TRON_DEFAULT_PROVIDER",
    "TRON_DEFAULT_MODEL",
)


def _key_print(value: str) -> str:
    return "sha256:" + hashlib.sha256(b"tron provider key\0" + value.encode()).hexdigest()[:12]


def fingerprint(environ: Mapping[str, str]) -> dict[str, str]:
    """The provider variables set in ``environ`` (empty values count as unset)."""
    out: dict[str, str] = {}
    for name in KEY_VARIABLES:
        if environ.get(name):
            out[name] = _key_print(environ[name])
    for name in PLAIN_VARIABLES:
        if environ.get(name):
            out[name] = environ[name]
    return out


def differences(here: Mapping[str, str], server: Mapping[str, str]) -> list[str]:
    """What is set here (a fingerprint) that the server lacks or has otherwise, one
    phrase per variable (``ANTHROPIC_BASE_URL is http://x here but not set in the
    server``); a variable only the server has is not a difference worth a word."""
    out = []
    for name, value in here.items():
        theirs = server.get(name)
        if theirs == value:
            continue
        if name in KEY_VARIABLES:
            what = "is set here but not in the server" if theirs is None else "differs"
        elif theirs is None:
            what = f"is {value} here but not set in the server"
        else:
            what = f"is {value} here but {theirs} in the server"
        out.append(f"{name} {what}")
    return out


__all__ = ["KEY_VARIABLES", "PLAIN_VARIABLES", "differences", "fingerprint"]
