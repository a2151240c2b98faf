"""Matchers, ignore paths, placeholders and the request hash."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

import llmvcr
from llmvcr.matching.jsonpath import parse_path
from llmvcr.matching.rules import BUILTIN_MATCHERS, Fingerprinter, canonical_json


def req(body: Any, method: str = "POST", path: str = "/v1/messages") -> dict[str, Any]:
    return {"method": method, "path": path, "query": [], "headers": {}, "body": body}


def test_canonical_json_sorts_and_compacts() -> None:
    assert (
        canonical_json({"b": 1, "a": {"d": "é", "c": [1, 2]}}) == '{"a":{"c":[1,2],"d":"é"},"b":1}'.encode()
    )
    assert canonical_json({"big": 2**70}) == b'{"big":1180591620717411303424}'


def test_default_hash_ignores_key_order_only() -> None:
    f = Fingerprinter()
    a = f.request_hash(req({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    b = f.request_hash(req({"messages": [{"content": "hi", "role": "user"}], "model": "m"}))
    c = f.request_hash(req({"messages": [{"content": "hi!", "role": "user"}], "model": "m"}))
    assert a == b != c and a.startswith("sha256:")


@pytest.mark.parametrize(
    "name",
    [
        "method",
        "path",
        "body",
        "model",
        "messages",
        "system",
        "tools",
        "params",
        "last_user_message",
        "stream",
    ],
)
def test_each_builtin_matcher_sees_only_its_part(name: str) -> None:
    base = {
        "model": "m",
        "system": "s",
        "tools": [{"name": "t"}],
        "max_tokens": 5,
        "stream": True,
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
    }
    f = Fingerprinter((name,))
    changes = {
        "method": (req(base, method="GET"), True),
        "path": (req(base, path="/v1/other"), True),
        "model": (req({**base, "model": "n"}), True),
        "messages": (req({**base, "messages": base["messages"][:1]}), True),
        "system": (req({**base, "system": "t"}), True),
        "tools": (req({**base, "tools": []}), True),
        "params": (req({**base, "max_tokens": 6}), True),
        "last_user_message": (req({**base, "messages": [{"role": "user", "content": "c"}]}), False),
        "stream": (req({**base, "stream": False}), True),
        "body": (req({**base, "max_tokens": 6}), True),
    }
    changed, differs = changes[name]
    assert (f.request_hash(req(base)) != f.request_hash(changed)) is differs
    # and a change outside the matcher's part leaves it alone
    if name in ("model", "system", "tools", "stream"):
        other = req({**base, "messages": [{"role": "user", "content": "zzz"}]})
        assert f.request_hash(req(base)) == f.request_hash(other)


def test_last_user_message_reads_text_blocks_and_responses_input() -> None:
    lum = BUILTIN_MATCHERS["last_user_message"]
    assert lum(req({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]})) == "x"
    assert lum(req({"input": "plain"})) == "plain"


def test_custom_and_registered_matchers() -> None:
    def temperature(r: dict[str, Any]) -> Any:
        return r["body"].get("temperature")

    f = Fingerprinter(("model", temperature))
    assert f.request_hash(req({"model": "m", "temperature": 0})) != f.request_hash(
        req({"model": "m", "temperature": 1})
    )
    llmvcr.register_matcher("first_word", lambda r: str(r["body"].get("prompt", "")).split(" ")[0])
    g = Fingerprinter(("first_word",))
    assert g.request_hash(req({"prompt": "hello a"})) == g.request_hash(req({"prompt": "hello b"}))
    with pytest.raises(ValueError, match="unknown matcher 'nope'"):
        Fingerprinter(("nope",))


def test_ignore_paths_with_wildcards() -> None:
    f = Fingerprinter(ignore=("metadata.user_id", "messages[*].content[*].cache_control"))
    a = {
        "metadata": {"user_id": "u1", "k": 1},
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }
    b = {
        "metadata": {"user_id": "u2", "k": 1},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    c = {**b, "metadata": {"user_id": "u2", "k": 2}}
    assert f.request_hash(req(a)) == f.request_hash(req(b)) != f.request_hash(req(c))
    assert parse_path("a[0].b[*]") == ["a", 0, "b", "*"]
    for bad in ("", ".a", "a..b"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_placeholders_make_volatile_text_match() -> None:
    date = llmvcr.placeholder(r"\d{4}-\d{2}-\d{2}", "date")
    f = Fingerprinter(placeholders=[date])
    assert f.request_hash(
        req({"messages": [{"role": "user", "content": "Today is 2026-12-02"}]})
    ) == f.request_hash(req({"messages": [{"role": "user", "content": "Today is 2027-01-05"}]}))
    assert f.request_hash(
        req({"messages": [{"role": "user", "content": "Today is 2026-12-02"}]})
    ) != f.request_hash(req({"messages": [{"role": "user", "content": "Yesterday was 2026-12-02"}]}))


def test_building_a_placeholder_registers_nothing() -> None:
    llmvcr.placeholder(r"\d{4}-\d{2}-\d{2}", "date")
    f = Fingerprinter()  # a cassette opened without placeholders
    assert f.placeholders == () and f.is_default
    assert f.request_hash(req({"messages": [{"role": "user", "content": "Today is 2026-12-02"}]})) != (
        f.request_hash(req({"messages": [{"role": "user", "content": "Today is 2027-01-05"}]}))
    )


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_prompt_with_todays_date_replays_tomorrow(anthropic_client: Any) -> None:
    date = llmvcr.placeholder(r"\d{4}-\d{2}-\d{2}", "date")
    today = datetime.date(2026, 12, 2)

    def ask(day: datetime.date) -> str:
        return (
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=16,
                messages=[{"role": "user", "content": f"Today is {day.isoformat()}. Plan my day."}],
            )
            .content[0]
            .text
        )

    with llmvcr.recording("dated", placeholders=[date]):
        recorded = ask(today)
    with llmvcr.recording("dated", placeholders=[date], record_mode="none"):
        assert ask(today + datetime.timedelta(days=1)) == recorded  # the recorded answer, not a new one
    # a later cassette opened without the placeholder: tomorrow's prompt is a new request, never
    # the answer recorded for today (the placeholder built above left nothing behind)
    with llmvcr.recording("dated", record_mode="none"), pytest.raises(llmvcr.ReplayDivergence):
        ask(today + datetime.timedelta(days=1))


PLACEHOLDER_ORDER = """
import datetime, llmvcr, pytest

def ask(client, day):
    text = f"Today is {day.isoformat()}. Plan my day."
    return client.messages.create(model="m", max_tokens=16, messages=[{"role": "user", "content": text}])

def test_with_placeholder(anthropic_client):
    date = llmvcr.placeholder(r"\\d{4}-\\d{2}-\\d{2}", "date")
    with llmvcr.recording("dated", placeholders=[date], record_mode="none"):
        ask(anthropic_client, datetime.date(2027, 1, 5))

def test_without_placeholder(anthropic_client):
    with llmvcr.recording("dated", record_mode="none"), pytest.raises(llmvcr.ReplayDivergence):
        ask(anthropic_client, datetime.date(2027, 1, 5))
"""


@pytest.mark.parametrize("order", ["with-first", "without-first"])
@pytest.mark.slow
def test_a_tests_placeholder_never_reaches_the_next_test(
    pytester: pytest.Pytester, anthropic_client: Any, order: str
) -> None:
    """Each test starts from the same state, whatever ran before it."""
    with llmvcr.recording(str(pytester.path / "cassettes" / "dated.yaml")):
        anthropic_client.messages.create(
            model="m",
            max_tokens=16,
            messages=[{"role": "user", "content": "Today is 2026-12-02. Plan my day."}],
        )
    body = PLACEHOLDER_ORDER
    if order == "without-first":
        first, second = body.index("def test_with_"), body.index("def test_without_")
        body = body[:first] + body[second:] + "\n" + body[first:second]
    pytester.makepyfile(test_order=body)
    pytester.makeconftest(
        "import anthropic, pytest, llmvcr\n"
        "@pytest.fixture(autouse=True)\n"
        "def _dir(tmp_path):\n"
        f"    llmvcr.configure(cassette_dir={str(pytester.path / 'cassettes')!r})\n"
        "@pytest.fixture\n"
        "def anthropic_client():\n"
        f"    return anthropic.Anthropic(api_key='k', base_url={str(anthropic_client.base_url)!r})\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


BASE = {
    "model": "m",
    "system": "s",
    "tools": [{"name": "t"}],
    "max_tokens": 5,
    "stream": True,
    "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ],
}


def _with(**changes: Any) -> dict[str, Any]:
    return {**BASE, **changes}


# each built-in: a change inside its part (must alter the hash), a change outside it (must not)
INSIDE_OUTSIDE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "method": (req(BASE, method="GET"), req(_with(model="n"))),
    "path": (req(BASE, path="/v1/other"), req(_with(model="n"), method="GET")),
    "query": ({**req(BASE), "query": [["api-version", "2"]]}, req(_with(model="n"), path="/v1/other")),
    "headers": ({**req(BASE), "headers": {"anthropic-beta": "x"}}, req(_with(model="n"))),
    "body": (req(_with(max_tokens=6)), req(BASE, path="/v1/other")),
    "model": (req(_with(model="n")), req(_with(max_tokens=6, system="t"))),
    "messages": (req(_with(messages=BASE["messages"][:1])), req(_with(model="n", system="t", tools=[]))),
    "system": (req(_with(system="t")), req(_with(model="n", messages=BASE["messages"][:1]))),
    "tools": (req(_with(tools=[])), req(_with(model="n", system="t"))),
    "params": (req(_with(max_tokens=6)), req(_with(system="t", tools=[], messages=BASE["messages"][:1]))),
    "last_user_message": (
        req(_with(messages=[*BASE["messages"][:2], {"role": "user", "content": "d"}])),
        req(_with(model="n", messages=[{"role": "user", "content": "c"}])),
    ),
    "stream": (req(_with(stream=False)), req(_with(model="n", max_tokens=6))),
}


@pytest.mark.parametrize("name", sorted(INSIDE_OUTSIDE))
def test_each_builtin_matcher_changes_inside_and_not_outside(name: str) -> None:
    f = Fingerprinter((name,))
    inside, outside = INSIDE_OUTSIDE[name]
    assert f.request_hash(req(BASE)) != f.request_hash(inside)
    assert f.request_hash(req(BASE)) == f.request_hash(outside)


def test_every_documented_builtin_is_tested() -> None:
    assert set(INSIDE_OUTSIDE) == set(BUILTIN_MATCHERS) - {
        "first_word",
        "temperature",
    }  # two registered by tests


def test_system_and_messages_read_openai_and_responses_shapes() -> None:
    system, messages = BUILTIN_MATCHERS["system"], BUILTIN_MATCHERS["messages"]
    chat = req(
        {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "developer", "content": "no emoji"},
                {"role": "user", "content": "hi"},
            ]
        }
    )
    assert system(chat) == ["be brief", "no emoji"]
    assert messages(chat) == [{"role": "user", "content": "hi"}]  # system/developer turns are not 'messages'
    responses = req({"instructions": "be brief", "input": "hi"}, path="/v1/responses")
    assert system(responses) == "be brief" and messages(responses) == "hi"
    assert BUILTIN_MATCHERS["params"](responses) == {}
    f = Fingerprinter(("system",))
    assert f.request_hash(chat) != f.request_hash(
        req({"messages": [{"role": "system", "content": "be long"}, {"role": "user", "content": "hi"}]})
    )


def test_ignore_and_redact_share_one_path_syntax() -> None:
    """``$.metadata.user_id`` means the same path to both; each refuses what would silently do nothing."""
    plain = Fingerprinter(ignore=["metadata.user_id"])
    dollar = Fingerprinter(ignore=["$.metadata.user_id"])
    a = {"metadata": {"user_id": "u1"}, "messages": []}
    b = {"metadata": {"user_id": "u2"}, "messages": []}
    assert dollar.request_hash(req(a)) == dollar.request_hash(req(b)) == plain.request_hash(req(a))
    with pytest.raises(ValueError, match=r"write '\$\.metadata\.user_id' for the path"):
        llmvcr.use_cassette("x", redact=["metadata.user_id"])
    with pytest.raises(ValueError, match=r"ignore: '\$\.\.a' is not a JSON path"):
        llmvcr.use_cassette("x", ignore=["$..a"])
    assert parse_path("$.messages[-1].content") == ["messages", -1, "content"]
