"""Helpers for the fault tests: condition-based waits, no fixed sleeps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


def wait_until(condition: Callable[[], Any], timeout: float = 15.0, *, step: Callable[[], Any] | None = None,
               what: str = "condition") -> Any:
    """Call ``step`` (e.g. a client's poll) until ``condition()`` is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        if step is not None:
            step()
        else:
            time.sleep(0.02)


async def wait_until_async(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(0.02)
    return value
