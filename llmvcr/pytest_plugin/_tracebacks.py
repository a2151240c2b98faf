"""A failed test's report, as the pytest plugin shows it: the traceback cut at the user's own line, and
whether the error is llmvcr's (its message then says it all).
"""

from __future__ import annotations

import functools
import os
from types import TracebackType

import pytest

from ..errors import LLMVCRError

__all__ = ["raised_by_llmvcr", "to_user_code"]


@functools.cache
def _libraries() -> tuple[str, ...]:
    """Where the standard library and installed packages live (asked when a test first fails)."""
    import sysconfig

    return tuple(
        os.path.normcase(os.path.realpath(sysconfig.get_paths()[name]) + os.sep)
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
    )


_OWN = os.path.normcase(os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep)


def to_user_code(
    excinfo: pytest.ExceptionInfo[BaseException],
) -> pytest.ExceptionInfo[BaseException] | None:
    """The exception with its traceback ending at the last frame of the user's code: no SDK, llmvcr
    or standard library frame after it (None: no frame is the user's). The exception is not changed."""
    frames: list[TracebackType] = []
    tb: TracebackType | None = excinfo.tb
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    last = max((i for i, t in enumerate(frames) if _user_code(t.tb_frame.f_code.co_filename)), default=None)
    if last is None or last == len(frames) - 1:
        return None if last is None else excinfo
    shortened = TracebackType(None, frames[last].tb_frame, frames[last].tb_lasti, frames[last].tb_lineno)
    for t in reversed(frames[:last]):  # a copy of the chain: pytest rebuilds entries from it
        shortened = TracebackType(shortened, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return pytest.ExceptionInfo.from_exc_info((type(excinfo.value), excinfo.value, shortened))


def raised_by_llmvcr(excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """llmvcr's errors, and a bad option (a ``ValueError`` raised in llmvcr): the message says it all."""
    if excinfo.errisinstance(LLMVCRError):
        return True
    tb: TracebackType | None = excinfo.tb
    innermost = ""
    while tb is not None:
        innermost, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return excinfo.errisinstance(ValueError) and os.path.normcase(os.path.realpath(innermost)).startswith(
        _OWN
    )


def _user_code(filename: str) -> bool:
    path = os.path.normcase(os.path.realpath(filename))
    return not path.startswith((*_libraries(), _OWN)) and "site-packages" not in path
