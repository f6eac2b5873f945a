"""The suite's configuration: hypothesis profiles, the machine's own files kept out of
reach, and the one fixtures plugin (:mod:`tests.support.fixtures`: ``store`` on SQLite
and PostgreSQL, ``anyio_backend``, the scripted model and real servers)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, Phase, settings

pytest_plugins = ["tests.support.fixtures"]

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# benchmarks/mutation.sh: the same examples for every mutant (a mutant is killed or not,
# whatever the run), none stored, and no shrinking (a killed mutant needs no minimal case).
settings.register_profile(
    "mutation",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Claude Code's user folder (~/.claude) is read as home-level configuration: never the
# machine's in tests (servers and clients started by tests inherit this too). A test that
# wants user-level files sets CLAUDE_CONFIG_DIR itself.
_CLAUDE_DIR = tempfile.mkdtemp(prefix="tron-tests-claude-")
atexit.register(shutil.rmtree, _CLAUDE_DIR, True)
os.environ["CLAUDE_CONFIG_DIR"] = _CLAUDE_DIR
# Servers the tests start (in this process or as children) never read the machine's
# ~/.claude.json, whose MCP servers they would start: a test that wants one names its own.
os.environ.setdefault("TRON_CLAUDE_JSON", "/nonexistent/tron-tests/.claude.json")
# The provider SDKs' endpoint variables are honoured (a Claude Code user has
# ANTHROPIC_BASE_URL set): a developer's must not send the tests' requests elsewhere.
for _name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
    os.environ.pop(_name, None)
