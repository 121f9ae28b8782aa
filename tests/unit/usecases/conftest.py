"""A fresh engine on fakes for each use-case test."""

from __future__ import annotations

import pytest

from tests.unit.usecases.world import World


@pytest.fixture
def world() -> World:
    """Returns an engine on fakes at T0, with nothing submitted."""
    return World()
