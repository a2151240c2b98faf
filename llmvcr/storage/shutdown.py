"""Writing what was recorded when the process is told to stop.

While a cassette records in the main thread, SIGTERM and Ctrl-C (SIGINT) first write the entries
still pending, then do what they would have done without llmvcr. A handler must never wait for a
lock its own thread holds (a deadlock) nor write while that thread is half-way through a write, so
the session's lock can ask its holder to send the signal again when the write ends.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any


class WriteLock:
    """The session's lock, which can re-send SIGTERM or SIGINT when its holder lets go.

    A SIGTERM handler must not wait for a lock its own thread may hold (a deadlock), nor write
    while that thread is half-way through a write: it asks the holder to signal again on release.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.resignal = 0  # the signal to send again on release, if any

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
            signum, self.resignal = self.resignal, 0
            os.kill(os.getpid(), signum)  # handled again, now that nothing is being written


class SigtermFlush:
    """The SIGTERM and SIGINT handlers of one recording session; ``restore()`` puts the previous back."""

    def __init__(
        self, lock: WriteLock, flush: Callable[[], None], previous: dict[signal.Signals, Any]
    ) -> None:
        self.lock, self.flush, self.previous = lock, flush, previous

    @classmethod
    def install(cls, lock: WriteLock, flush: Callable[[], None]) -> SigtermFlush | None:
        """Catch SIGTERM and SIGINT, unless this is not the main thread or someone else handles them."""
        if threading.current_thread() is not threading.main_thread():
            return None
        defaults = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}
        previous = {s: h for s, h in defaults.items() if signal.getsignal(s) is h}
        if not previous:
            return None
        handler = cls(lock, flush, previous)
        for signum in previous:
            signal.signal(signum, handler.on_signal)
        return handler

    def on_signal(self, signum: int, frame: Any) -> None:
        if not self.lock.free():
            self.lock.resignal = signum  # a write is under way: its end signals again
            if not self.lock.free():
                return
            self.lock.resignal = 0  # it ended meanwhile
        try:
            self.flush()
        except Exception as err:  # the process still ends as asked: say what could not be written
            print(f"llmvcr: {err}", file=sys.stderr, flush=True)
        finally:
            if signum == signal.SIGINT:
                signal.default_int_handler(signum, frame)  # KeyboardInterrupt, once nothing waits
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def restore(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum, previous in self.previous.items():
                signal.signal(signum, previous)
