"""The commands tests run on a server in the default permission mode (``make_server``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.server import RunningServer


@pytest.fixture
def server(make_server: Callable[..., RunningServer]) -> RunningServer:
    return make_server()
