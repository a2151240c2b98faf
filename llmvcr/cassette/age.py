"""How old a cassette is: durations as users write them (``"30d"``, ``"12h"``), the recording date a
cassette stores (``recorded_with.at``), and the policies of ``on_unplayed`` and ``expiry``.

>>> parse_age("1d12h")
datetime.timedelta(days=1, seconds=43200)
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from ..wording import plural

__all__ = [
    "EXPIRY_POLICIES",
    "UNPLAYED_POLICIES",
    "age_text",
    "on_ci",
    "parse_age",
    "recorded_at",
]

UNPLAYED_POLICIES: tuple[str, ...] = ("warn", "fail", "ignore")
EXPIRY_POLICIES: tuple[str, ...] = ("warn", "fail", "re-record")

_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = r"(\d+(?:\.\d+)?)\s*([wdhms])"  # compiled when an age is first read


def parse_age(value: Any) -> timedelta:
    """A ``timedelta`` from a ``timedelta``, a number of seconds, or text such as ``"30d"``, ``"12h"``,
    ``"2w"``, ``"1d12h"``, ``"90m"``; ``ValueError`` saying what is accepted otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        parts = re.findall(_PART, text)
        if not parts or re.sub(_PART, "", text).strip():
            raise ValueError(
                f"max_age {value!r} is not a duration; write it as '30d', '12h', '2w', '1d12h' "
                f"(w, d, h, m, s) or give a datetime.timedelta"
            )
        seconds = sum(float(n) * _UNITS[unit] for n, unit in parts)
    else:
        raise ValueError(f"max_age must be a duration like '30d' or a datetime.timedelta, not {value!r}")
    if seconds <= 0:
        raise ValueError(f"max_age must be longer than zero, not {value!r}")
    return timedelta(seconds=seconds)


def recorded_at(recorded_with: dict[str, str]) -> datetime | None:
    """When the cassette was recorded (``recorded_with.at``), or None for a cassette that names no
    date (recorded before llmvcr wrote one, or converted from a format that has none)."""
    text = recorded_with.get("at")
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def age_text(age: timedelta) -> str:
    """``"45 days"``, ``"3 hours"``, ``"12 minutes"``: an age the way a person says it."""
    seconds = age.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            return plural(int(seconds // size), unit)
    return plural(int(seconds), "second")


def on_ci() -> bool:
    """``CI`` is set to a true value (``false``, ``0``, ``no``, ``off`` and empty mean not CI)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")
