"""The pipe through which a network thread wakes the event loop (sender.py, receiver.py).

The C threads never run Python: when one has something for the loop (answers sent, bytes read) it writes one byte
to the pipe, at most once until the loop takes what it has, and the loop's reader on the other end runs the
callback. Both ends are non-blocking: a full pipe already wakes the loop, and the loop empties it before it takes
(a batch finished after the take writes its byte again).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

__all__ = ["WakePipe"]


class WakePipe:
    """A non-blocking pipe: the thread is given :attr:`write_fd`; :meth:`listen` runs ``on_wake`` on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self._listening = False

    def listen(self, on_wake: Callable[[], None]) -> None:
        self._loop.add_reader(self.read_fd, on_wake)
        self._listening = True

    def drain(self) -> None:
        """Empty the pipe (before taking what the thread has)."""
        try:
            while os.read(self.read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        """Stop listening and close both ends (after the thread has ended)."""
        if self._listening:
            self._loop.remove_reader(self.read_fd)
            self._listening = False
        os.close(self.read_fd)
        os.close(self.write_fd)
