"""The process-wide container the API routes use: built from the environment on first use."""

from __future__ import annotations

from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container

_container: Container | None = None


def container() -> Container:
    """Returns the process's container, building it on first use (a Lambda cold start)."""
    global _container  # noqa: PLW0603 - one composition root per process, by design
    if _container is None:
        _container = Container(Settings.from_env())
    return _container


def use(replacement: Container) -> None:
    """Makes the routes use replacement (tests and the local stack build their own)."""
    global _container  # noqa: PLW0603
    _container = replacement
