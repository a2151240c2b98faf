"""``@llmvcr.tool``: tools recorded by name and arguments, replayed without running their body."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ANTHROPIC_SENTINEL

import llmvcr
from llmvcr.errors import (
    RecordedToolError,
    ReplayDivergence,
    ToolDeniedError,
    UnplayedEntriesError,
)
from llmvcr.options import Options, policy_for


@dataclass
class Booking:
    day: int
    room: str


class Effects:
    """Real executions, counted: a replay must add none."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Any]] = []

    def count(self, name: str) -> int:
        return sum(1 for n, _ in self.runs if n == name)


def make_tools(effects: Effects) -> dict[str, Any]:
    clock = iter(range(1000))

    @llmvcr.tool
    def send_email(to: str, subject: str = "hello") -> str:
        """Send an email and return its id."""
        effects.runs.append(("send_email", to))
        return f"msg-{next(clock)}-{to}"

    @llmvcr.tool(name="book_room")
    async def book(day: int, room: str = "A") -> Booking:
        effects.runs.append(("book_room", day))
        await asyncio.sleep(0)
        return Booking(day, room)

    @llmvcr.tool
    def pages(query: str) -> Iterator[str]:
        effects.runs.append(("pages", query))
        yield from (f"{query}-{i}" for i in range(3))

    @llmvcr.tool
    async def lines(query: str) -> AsyncIterator[str]:
        effects.runs.append(("lines", query))
        for i in range(2):
            yield f"{query}:{i}"

    return {"send_email": send_email, "book": book, "pages": pages, "lines": lines}


async def collect(items: AsyncIterator[str]) -> list[str]:
    return [item async for item in items]


def run_all(tools: dict[str, Any]) -> list[Any]:
    return [
        tools["send_email"]("ada@example.com"),
        tools["send_email"]("ada@example.com"),  # the same call again: its own recorded result
        asyncio.run(tools["book"](3, room="B")),
        list(tools["pages"]("llm")),
        asyncio.run(collect(tools["lines"]("vcr"))),
    ]


def test_a_tool_records_then_replays_without_running_its_body(cassette_dir: Path) -> None:
    effects = Effects()
    tools = make_tools(effects)
    with llmvcr.recording("tools") as cassette:
        recorded = run_all(tools)
    assert len(effects.runs) == 5 and len(cassette) == 5
    assert recorded[0] != recorded[1]  # two occurrences, two different results
    with llmvcr.use_cassette("tools", record_mode="none", on_unplayed="fail"):
        replayed = run_all(tools)
    assert replayed == recorded and isinstance(replayed[2], Booking)
    assert len(effects.runs) == 5  # zero real executions on replay
    entry = yaml.safe_load((cassette_dir / "tools.yaml").read_text())["entries"][2]
    assert entry["provider"] == "tool" and entry["request"]["method"] == "tool"
    assert entry["request"]["path"] == "book_room"
    assert entry["request"]["body"] == {"arguments": {"day": 3, "room": "B"}}


def test_outside_a_cassette_a_tool_is_a_plain_call() -> None:
    effects = Effects()
    tools = make_tools(effects)
    assert tools["send_email"]("bob") == "msg-0-bob"
    assert asyncio.run(tools["book"](1)) == Booking(1, "A")
    assert list(tools["pages"]("q")) == ["q-0", "q-1", "q-2"]
    assert len(effects.runs) == 3


def test_the_decorated_function_looks_like_the_original() -> None:
    def original(to: str, subject: str = "hello", *, urgent: bool = False) -> str:
        """Send an email."""
        return to

    async def coro(x: int) -> int:
        return x

    def gen(x: int) -> Iterator[int]:
        yield x

    async def agen(x: int) -> AsyncIterator[int]:
        yield x

    wrapped = llmvcr.tool(original)
    assert inspect.signature(wrapped) == inspect.signature(original)
    assert wrapped.__name__ == "original" and wrapped.__doc__ == "Send an email."
    assert wrapped.__annotations__ == original.__annotations__
    assert inspect.iscoroutinefunction(llmvcr.tool(coro))
    assert inspect.isgeneratorfunction(llmvcr.tool(gen))
    assert inspect.isasyncgenfunction(llmvcr.tool(agen))
    assert llmvcr.tool(wrapped) is wrapped  # decorating twice records once


class Mailer:
    def __init__(self) -> None:
        self.sent = 0

    @llmvcr.tool
    def send(self, to: str) -> str:
        self.sent += 1
        return f"sent {self.sent} to {to}"

    @classmethod
    @llmvcr.tool
    def domain(cls, user: str) -> str:
        return f"{user}@{cls.__name__.lower()}.example"


def test_a_method_is_keyed_without_its_instance(cassette_dir: Path) -> None:
    with llmvcr.use_cassette("method"):
        assert Mailer().send("ada") == "sent 1 to ada"
        assert Mailer.domain("ada") == "ada@mailer.example"
    mailer = Mailer()  # another instance: the same call
    with llmvcr.use_cassette("method", record_mode="none"):
        assert mailer.send("ada") == "sent 1 to ada" and mailer.sent == 0
        assert Mailer.domain("ada") == "ada@mailer.example"
    stored = yaml.safe_load((cassette_dir / "method.yaml").read_text())["entries"]
    assert [e["request"]["body"]["arguments"] for e in stored] == [{"to": "ada"}, {"user": "ada"}]
    assert inspect.signature(mailer.send) == inspect.signature(lambda to: None).replace(
        parameters=[inspect.Parameter("to", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="str")],
        return_annotation="str",
    )


def test_a_partial_is_a_tool_once_named_and_an_unplayed_call_is_pruned(cassette_dir: Path) -> None:
    def convert(amount: float, rate: float) -> float:
        return amount * rate

    with pytest.raises(TypeError, match="name the tool"):
        llmvcr.tool(functools.partial(convert, rate=2.0))
    to_eur = llmvcr.tool(functools.partial(convert, rate=0.5), name="to_eur")
    with llmvcr.use_cassette("partial"):
        assert to_eur(10.0) == 5.0
        assert to_eur(20.0) == 10.0
    with llmvcr.use_cassette("partial", record_mode="none", prune=True, on_unplayed="ignore"):
        assert to_eur(20.0) == 10.0
    stored = yaml.safe_load((cassette_dir / "partial.yaml").read_text())["entries"]
    assert [e["request"] for e in stored] == [
        {"method": "tool", "path": "to_eur", "body": {"arguments": {"amount": 20.0, "rate": 0.5}}}
    ]


def test_other_arguments_diverge_naming_the_tool_and_the_diff(cassette_dir: Path) -> None:
    tools = make_tools(Effects())
    with llmvcr.use_cassette("diverge"):
        tools["send_email"]("ada@example.com", subject="invoice")
    with (
        llmvcr.use_cassette("diverge", record_mode="none", on_unplayed="ignore"),
        pytest.raises(ReplayDivergence) as caught,
    ):
        tools["send_email"]("ada@example.com", subject="refund")
    message = str(caught.value)
    assert "tool send_email" in message and "diverge.yaml" in message
    assert ("request.body.arguments.subject", "invoice", "refund") in caught.value.diff
    assert caught.value.nearest.request.path == "send_email"


def test_loose_mode_still_tells_tools_and_arguments_apart(cassette_dir: Path) -> None:
    tools = make_tools(Effects())
    with llmvcr.use_cassette("loose", mode="loose"):
        sent = tools["send_email"]("ada")
        booked = asyncio.run(tools["book"](1))
    with llmvcr.use_cassette("loose", mode="loose", record_mode="none", on_unplayed="ignore"):
        with pytest.raises(ReplayDivergence, match="tool book_room"):
            asyncio.run(tools["book"](2))  # not the booking recorded for day 1, nor the email
        assert asyncio.run(tools["book"](1)) == booked and tools["send_email"]("ada") == sent


def test_sequential_mode_never_serves_a_tool_another_calls_answer(cassette_dir: Path) -> None:
    tools = make_tools(Effects())
    with llmvcr.use_cassette("order"):
        tools["send_email"]("ada")
        asyncio.run(tools["book"](1))
    with llmvcr.use_cassette("order", mode="sequential", record_mode="none", on_unplayed="ignore"):
        with pytest.raises(
            ReplayDivergence, match=r"served tool 'book_room' the entry recorded for tool tool send_email"
        ):
            asyncio.run(tools["book"](1))


def test_ignore_applies_to_tool_arguments(cassette_dir: Path) -> None:
    tools = make_tools(Effects())
    with llmvcr.use_cassette("ignored", ignore="$.body.arguments.subject"):
        first = tools["send_email"]("ada", subject="sent at 10:00")
    with llmvcr.use_cassette("ignored", record_mode="none", ignore="$.body.arguments.subject"):
        assert tools["send_email"]("ada", subject="sent at 10:05") == first


def test_a_recorded_call_never_made_is_unplayed(cassette_dir: Path) -> None:
    tools = make_tools(Effects())
    with llmvcr.use_cassette("unplayed"):
        tools["send_email"]("ada")
        tools["send_email"]("bob")
    with (
        pytest.raises(UnplayedEntriesError, match="1 of 2 recorded entries"),
        llmvcr.use_cassette("unplayed", record_mode="none", on_unplayed="fail"),
    ):
        tools["send_email"]("ada")


class NotRebuilt(Exception):
    def __init__(self, code: int, detail: str) -> None:  # not built from a message alone
        super().__init__(f"{code}: {detail}")


def test_a_recorded_exception_is_raised_again(cassette_dir: Path) -> None:
    effects = Effects()

    @llmvcr.tool
    def charge(amount: int) -> str:
        effects.runs.append(("charge", amount))
        if amount < 0:
            raise ValueError(f"negative amount {amount}")
        raise NotRebuilt(402, "card declined")

    for mode in ("once", "none"):
        with llmvcr.use_cassette("errors", record_mode=mode):
            with pytest.raises(ValueError, match="negative amount -1"):
                charge(-1)
            with pytest.raises(NotRebuilt if mode == "once" else RecordedToolError) as caught:
                charge(5)
    assert len(effects.runs) == 2
    assert "tool 'charge'" in str(caught.value) and "NotRebuilt" in str(caught.value)
    assert "402: card declined" in str(caught.value)


def test_a_denial_returned_as_a_result_replays_byte_identically(cassette_dir: Path) -> None:
    denial = 'Permission denied: the user refused `rm -rf /tmp/x`.\n  Reason:\t"unsafe" \u2014 ok?\n\n'

    @llmvcr.tool
    def shell(command: str) -> str:
        return denial

    with llmvcr.use_cassette("denial"):
        assert shell("rm -rf /tmp/x") == denial
    with llmvcr.use_cassette("denial", record_mode="none"):
        assert shell("rm -rf /tmp/x").encode() == denial.encode()


def test_tool_policy_live_runs_unrecorded_and_deny_refuses(cassette_dir: Path) -> None:
    effects = Effects()
    tools = make_tools(effects)
    policy = {"send_email": "live", "pages": "deny"}
    with llmvcr.recording("policy", tool_policy=policy) as cassette:
        tools["send_email"]("ada")
        asyncio.run(tools["book"](2))
        with pytest.raises(ToolDeniedError) as caught:
            list(tools["pages"]("secret"))
    assert [e.request.path for e in cassette.entries] == ["book_room"]  # live: never recorded
    message = str(caught.value)
    assert "'pages'" in message and "policy.yaml" in message
    assert "test_tool_policy_live_runs_unrecorded_and_deny_refuses" in message
    with llmvcr.use_cassette("policy", record_mode="none", tool_policy=policy):
        tools["send_email"]("ada")  # live: runs again, matched against nothing
        asyncio.run(tools["book"](2))
    assert effects.count("send_email") == 2 and effects.count("book_room") == 1
    assert effects.count("pages") == 0


def test_a_bad_tool_policy_is_refused_when_given() -> None:
    with pytest.raises(ValueError, match=r"tool_policy for tool 'drop_table'.*did you mean 'deny'"):
        llmvcr.use_cassette("x", tool_policy={"drop_table": "denny"})
    with pytest.raises(ValueError, match="must map tool names"):
        llmvcr.use_cassette("x", tool_policy=["drop_table"])  # type: ignore[typeddict-item]
    options = Options.build(tool_policy={"get_time": "live"})
    assert policy_for(options, "get_time") == "live" and policy_for(options, "other") == "replay"


def test_resume_serves_the_prefix_and_runs_only_new_calls(cassette_dir: Path) -> None:
    effects = Effects()
    tools = make_tools(effects)
    with llmvcr.use_cassette("resume"):
        tools["send_email"]("ada")
        tools["send_email"]("bob")  # the crash came after this one: no entry for what follows
    assert effects.count("send_email") == 2
    with llmvcr.recording("resume", record_mode="none", on_divergence="live") as cassette:
        assert tools["send_email"]("ada") == "msg-0-ada"  # served
        assert tools["send_email"]("bob") == "msg-1-bob"  # served
        assert tools["send_email"]("cyd") == "msg-2-cyd"  # never recorded: runs
        assert tools["send_email"]("ada") == "msg-3-ada"  # after the divergence: runs, recorded
    assert effects.count("send_email") == 4
    assert len(cassette) == 4
    with llmvcr.use_cassette("resume", record_mode="none", on_unplayed="fail"):
        for to in ("ada", "bob", "cyd", "ada"):
            tools["send_email"](to)
    assert effects.count("send_email") == 4  # the whole run replays with nothing run


def test_a_key_in_a_tool_argument_or_result_never_reaches_disk(cassette_dir: Path) -> None:
    @llmvcr.tool
    def login(user: str, api_key: str) -> dict[str, str]:
        return {"user": user, "session": f"issued for {ANTHROPIC_SENTINEL}"}

    @llmvcr.tool
    def sign(payload: str, secret: str) -> str:  # no key shape: only its name says what it is
        return payload + "/" + secret

    @llmvcr.tool
    def connect(host: str) -> None:
        raise PermissionError(f"rejected key {ANTHROPIC_SENTINEL} for {host}")

    with llmvcr.use_cassette("keys"):
        live = login("ada", api_key=ANTHROPIC_SENTINEL)
        sign("x", secret="plainword-SENTINEL-123")
        with pytest.raises(PermissionError, match="SENTINEL"):  # the caller sees the real error
            connect("db")
    written = (cassette_dir / "keys.yaml").read_bytes()
    assert b"SENTINEL" not in written and b"ada" in written
    with llmvcr.use_cassette("keys", record_mode="none"):
        replayed = login("ada", api_key=ANTHROPIC_SENTINEL)  # matches its redacted record
        assert sign("x", secret="plainword-SENTINEL-123") == "x/<REDACTED:api-key>"
        with pytest.raises(PermissionError, match=r"rejected key <REDACTED:[a-z-]+> for db"):
            connect("db")
    assert replayed["user"] == live["user"] and ANTHROPIC_SENTINEL not in replayed["session"]
