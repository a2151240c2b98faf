"""The options of ``use_cassette`` and ``recording``, checked once when they are given.

Precedence, lowest first: an option's default (for ``record_mode``, ``settings.default_record_mode``:
``once``, or ``none`` when the pytest plugin runs on CI), the value given to ``use_cassette`` (in pytest:
``llmvcr_config``, then the marker), then a process-wide ``configure(record_mode=...)`` (the
``--llmvcr-record-mode`` flag), which overrides every cassette.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .cassette import Entry
from .cassette.age import EXPIRY_POLICIES, UNPLAYED_POLICIES, parse_age
from .cassette.linear import LAYOUTS, Layout
from .cassette.values import FrozenValue, Value
from .matching import DEFAULT_MATCH_ON, Fingerprinter, MatcherSpec, Placeholder
from .redaction import Redactor, compile_keep, compile_paths, compile_redactions

RecordMode = Literal["once", "new_episodes", "none", "all"]
MatchMode = Literal["strict", "sequential", "loose"]
DivergencePolicy = Literal["raise", "warn", "live"]
RECORD_MODES: tuple[str, ...] = ("once", "new_episodes", "none", "all")
MATCH_MODES: tuple[str, ...] = ("strict", "sequential", "loose")
DIVERGENCE_POLICIES: tuple[str, ...] = ("raise", "warn", "live")
STALE_POLICIES: tuple[str, ...] = ("report", "fail")
TOOL_POLICIES: tuple[str, ...] = ("replay", "live", "deny")

BeforeRecord = Callable[[Entry], "Entry | None"]

# cassetter's "rewrite" deletes the file, then records: a test that no longer calls leaves no file.
# llmvcr's "all" replaces the file at its first write, so a test that records nothing keeps the old
# one, and says so (llmvcr.freshness.check). One mode, not two that differ only there.
REWRITE = (
    "unknown record_mode 'rewrite'; llmvcr's 'all' re-records the cassette (cassetter's 'rewrite' also "
    "deletes a file the test no longer fills; with 'all' such a file is kept and reported as unplayed): "
    "use record_mode='all'"
)


if TYPE_CHECKING:  # for type checkers only: a TypedDict compiles each key's annotation when made (1.5 ms)

    class CassetteOptions(TypedDict, total=False):
        """The keyword options of ``use_cassette``/``recording``: ``**options: Unpack[CassetteOptions]``."""

        record_mode: RecordMode
        mode: MatchMode
        match_on: MatcherSpec | Sequence[MatcherSpec]
        ignore: str | Sequence[str]
        placeholders: Sequence[Placeholder] | None
        on_divergence: DivergencePolicy
        seed: str | None
        allow_playback_repeats: bool
        before_record: BeforeRecord | None
        filter_headers: str | Sequence[str]
        redact: str | re.Pattern[str] | Sequence[str | re.Pattern[str]]
        replay_speed: float | None
        prune: bool
        allow_unrecognized: str | Sequence[str]
        redact_keep: str | re.Pattern[str] | Sequence[str | re.Pattern[str]]
        layout: Layout | None
        on_unplayed: Literal["warn", "fail", "ignore"] | None
        max_age: str | timedelta | float | None
        expiry: Literal["warn", "fail", "re-record"] | None
        on_stale: Literal["report", "fail"]
        recorded_match_on: Sequence[str] | None
        tool_policy: Mapping[str, Literal["replay", "live", "deny"]] | None


@dataclass(slots=True, eq=False, repr=False)
class Settings(Value):
    """Process-wide defaults: where bare cassette names live and in which format, a record mode that
    overrides all, and the record mode of a cassette that names none (``none`` on CI under pytest)."""

    cassette_dir: str = "cassettes"
    cassette_format: str = "yaml"  # of a cassette named without a suffix (a bare name, a test's marker)
    record_mode: str | None = None
    default_record_mode: str = "once"


settings = Settings()
CASSETTE_FORMATS = ("yaml", "json")


def configure(
    *,
    cassette_dir: str | os.PathLike[str] | None = None,
    record_mode: str | None = None,
    cassette_format: str | None = None,
) -> None:
    """Process-wide defaults: where bare cassette names live, a record mode that overrides all, and
    the format (``yaml`` or ``json``) of a cassette named without a suffix."""
    if cassette_dir is not None:
        settings.cassette_dir = os.fspath(cassette_dir)
    if record_mode is not None:
        check("record_mode", record_mode, RECORD_MODES)
        settings.record_mode = record_mode
    if cassette_format is not None:
        check("cassette_format", cassette_format, CASSETTE_FORMATS)
        settings.cassette_format = cassette_format


def with_suffix(base: str) -> str:
    """``base`` (a path without a suffix) with the configured format's suffix; with the other
    format's when only that file exists, so a project that switches format keeps replaying the
    cassettes it has until ``llmvcr convert`` rewrites them."""
    mine = f"{base}.{settings.cassette_format}"
    if os.path.lexists(mine):
        return mine
    other = f"{base}.{'yaml' if settings.cassette_format == 'json' else 'json'}"
    return other if os.path.lexists(other) else mine


def resolve_path(name_or_path: str | os.PathLike[str]) -> str:
    """A path when it has a separator or a cassette extension; otherwise ``<cassette_dir>/<name>.yaml``
    (``.json`` after ``configure(cassette_format="json")``; see :func:`with_suffix`)."""
    text = os.fspath(name_or_path)
    if Redactor().text(text) != text:
        raise ValueError(
            f"the cassette name {Redactor().text(text)!r} holds something shaped like a key; a name becomes "
            f"a file name, so choose one without it"
        )
    if os.sep in text or "/" in text or text.lower().endswith((".yaml", ".yml", ".json")):
        return text
    return with_suffix(os.path.join(settings.cassette_dir, text))


def check(option: str, value: Any, valid: Iterable[str]) -> None:
    """``ValueError`` naming the option and its valid values when ``value`` is not one of them."""
    valid = tuple(valid)
    if option == "record_mode" and value == "rewrite":
        raise ValueError(REWRITE)
    if value not in valid:
        raise ValueError(f"unknown {option} {value!r}{did_you_mean(value, valid)}; valid: {', '.join(valid)}")


def did_you_mean(word: Any, valid: Iterable[str]) -> str:
    """``; did you mean 'once'?`` for the closest valid name, or nothing when none is close."""
    if not isinstance(word, str):
        return ""
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return (value,) if isinstance(value, (str, re.Pattern)) else tuple(value)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Options(FrozenValue):
    """Everything ``use_cassette`` and ``recording`` accept, checked when built."""

    record_mode: str | None = None  # None: settings.default_record_mode, when the cassette opens
    mode: str = "strict"
    match_on: tuple[MatcherSpec, ...] = DEFAULT_MATCH_ON
    ignore: tuple[str, ...] = ()
    placeholders: tuple[Placeholder, ...] | None = None
    on_divergence: str = "raise"
    seed: str | None = None
    allow_playback_repeats: bool = False
    before_record: BeforeRecord | None = None
    filter_headers: tuple[str, ...] = ()
    redact: tuple[str | re.Pattern[str], ...] = ()
    replay_speed: float | None = None
    prune: bool = False
    allow_unrecognized: tuple[str, ...] = ()  # hosts ("*": any) whose unclaimed requests may go out
    redact_keep: tuple[str | re.Pattern[str], ...] = ()  # key-shaped text that is not a key
    layout: Layout | None = None  # of a new file ("linear" unless given); a file keeps its own
    # freshness (llmvcr.freshness.check): None means the run's setting, else warn / no limit / warn
    on_unplayed: str | None = None
    max_age: timedelta | None = None
    expiry: str | None = None
    # a vcrpy-made cassette is matched as vcrpy matched it (llmvcr.matching.as_recorded) unless
    # match_on or a mode is given; on_stale="fail" makes a call whose request drifted an error
    on_stale: str = "report"
    recorded_match_on: tuple[str, ...] | None = None  # vcrpy's match_on names (the project's vcr_config)
    # tool name -> "replay" (what any tool not named gets), "live" or "deny"; see policy_for
    tool_policy: tuple[tuple[str, str], ...] = ()
    fingerprinter: Fingerprinter = field(default_factory=Fingerprinter)
    matching_chosen: bool = False  # match_on or a mode other than strict was given

    @classmethod
    def build(cls, **options: Any) -> Options:
        """Options from keywords; an unknown name or a bad value raises ``ValueError`` naming it.

        Options are frozen, so identical keywords (a suite's marker, test after test) share one.
        """
        try:  # the type too: True and 1, 1 and 1.0 are equal keys but not the same option
            key: Any = tuple(sorted((name, type(value), value) for name, value in options.items()))
            hit = _built.get(key)
        except TypeError:  # a list or another unhashable value: built afresh
            key, hit = None, None
        if hit is not None:
            return hit
        built = cls._build(**options)
        if key is not None:
            if len(_built) >= 256:  # bounded: options built in a loop must not grow without end
                _built.clear()
            _built[key] = built
        return built

    @classmethod
    def _build(cls, **options: Any) -> Options:
        known = set(cls.__dataclass_fields__) - {"fingerprinter", "matching_chosen"}
        unknown = sorted(set(options) - known)
        if unknown:
            hint = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
            raise ValueError(
                f"unknown option(s) {', '.join(map(repr, unknown))}{hint}; valid: {', '.join(sorted(known))}"
            )
        if "match_on" in options:
            match_on = options["match_on"]
            options["match_on"] = (
                (match_on,) if isinstance(match_on, str) or callable(match_on) else tuple(match_on)
            )
        for key in ("ignore", "filter_headers", "redact", "allow_unrecognized", "redact_keep"):
            if key in options:
                options[key] = _as_tuple(options[key])
        if options.get("recorded_match_on") is not None:
            options["recorded_match_on"] = _as_tuple(options["recorded_match_on"])
        if options.get("placeholders") is not None:
            options["placeholders"] = tuple(options["placeholders"])
        if options.get("tool_policy") is not None:
            options["tool_policy"] = _tool_policy(options["tool_policy"])
        elif "tool_policy" in options:
            options["tool_policy"] = ()
        if options.get("max_age") is not None:
            options["max_age"] = parse_age(options["max_age"])
        built = cls(**options)
        if built.on_unplayed is not None:
            check("on_unplayed", built.on_unplayed, UNPLAYED_POLICIES)
        if built.expiry is not None:
            check("expiry", built.expiry, EXPIRY_POLICIES)
        if built.record_mode is not None:
            check("record_mode", built.record_mode, RECORD_MODES)
        check("mode", built.mode, MATCH_MODES)
        check("on_divergence", built.on_divergence, DIVERGENCE_POLICIES)
        check("on_stale", built.on_stale, STALE_POLICIES)
        if built.layout is not None:
            check("layout", built.layout, LAYOUTS)
        if built.before_record is not None and not callable(built.before_record):
            raise ValueError(
                "before_record must be a callable taking an Entry and returning an Entry or None"
            )
        if built.replay_speed is not None and not built.replay_speed > 0:
            raise ValueError(
                f"replay_speed must be a positive number (1.0 = recorded pacing), not {built.replay_speed!r}"
            )
        match_on = ("last_user_message",) if built.mode == "loose" else built.match_on
        fingerprinter = Fingerprinter(match_on, built.ignore, built.placeholders)
        compile_redactions(built.redact)
        compile_paths(built.redact)
        compile_keep(built.redact_keep)
        chosen = "match_on" in options or built.mode != "strict"
        return replace(built, fingerprinter=fingerprinter, matching_chosen=chosen)


def _tool_policy(given: Any) -> tuple[tuple[str, str], ...]:
    """``{"send_email": "replay", ...}`` checked, as sorted pairs (options are frozen and hashable)."""
    pairs = given.items() if isinstance(given, Mapping) else None
    if pairs is None:
        raise ValueError(
            f"tool_policy must map tool names to 'replay', 'live' or 'deny', like "
            f"{{'send_email': 'replay', 'get_time': 'live', 'drop_table': 'deny'}}; got {given!r}"
        )
    for tool, policy in pairs:
        if not isinstance(tool, str) or not tool:
            raise ValueError(f"tool_policy: a tool is named by its name as a string, not {tool!r}")
        check(f"tool_policy for tool {tool!r}:", policy, TOOL_POLICIES)
    return tuple(sorted((tool, str(policy)) for tool, policy in pairs))


def policy_for(options: Options, tool: str) -> str:
    """The policy of the tool named ``tool`` (an ``@llmvcr.tool``'s name, an MCP ``tools/call``'s
    ``params.name``): ``"replay"`` unless ``tool_policy`` names it."""
    for name, policy in options.tool_policy:
        if name == tool:
            return policy
    return "replay"


_built: dict[Any, Options] = {}  # keywords -> Options already built and checked
