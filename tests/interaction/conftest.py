"""The interaction tests run on a server in the default permission mode: it asks before
anything that is not read-only (``make_server``, tests/support/fixtures.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.server import RunningServer


@pytest.fixture
def server(make_server: Callable[..., RunningServer]) -> RunningServer:
    return make_server()
