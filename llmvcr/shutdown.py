"""Writing what was recorded when the process is told to stop.

While a cassette records in the main thread, SIGTERM first writes the entries still pending, then
does what it would have done without llmvcr. The handler must never wait for a lock its own
thread holds (a deadlock) nor write while that thread is half-way through a write, so the
session's lock can ask its holder to send the signal again when the write ends.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any


class WriteLock:
    """The session's lock, which can re-send SIGTERM when its holder lets go.

    A SIGTERM handler must not wait for a lock its own thread may hold (a deadlock), nor write
    while that thread is half-way through a write: it asks the holder to signal again on release.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.resignal = False

    def free(self) -> bool:
        if self._lock.acquire(blocking=False):
            self._lock.release()
            return True
        return False

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        if self.resignal:
            self.resignal = False
            os.kill(os.getpid(), signal.SIGTERM)  # handled again, now that nothing is being written


class SigtermFlush:
    """The SIGTERM handler of one recording session; ``restore()`` puts the previous one back."""

    def __init__(self, lock: WriteLock, flush: Callable[[], None], previous: Any) -> None:
        self.lock, self.flush, self.previous = lock, flush, previous

    @classmethod
    def install(cls, lock: WriteLock, flush: Callable[[], None]) -> SigtermFlush | None:
        """Catch SIGTERM, unless this is not the main thread or someone else already handles it."""
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = signal.getsignal(signal.SIGTERM)
        if previous is not signal.SIG_DFL:
            return None
        handler = cls(lock, flush, previous)
        signal.signal(signal.SIGTERM, handler.on_sigterm)
        return handler

    def on_sigterm(self, signum: int, frame: Any) -> None:
        if not self.lock.free():
            self.lock.resignal = True  # a write is under way: its end signals again
            if not self.lock.free():
                return
            self.lock.resignal = False  # it ended meanwhile
        try:
            self.flush()
        except Exception as err:  # the process still ends as asked: say what could not be written
            print(f"llmvcr: {err}", file=sys.stderr, flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def restore(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.previous)
