"""A long prompt found clean is not scanned again, and that never lets a secret through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmvcr.redaction import Redactor, known_clean

PROMPT = "You review quarterly reports against the ledger and say what does not add up. " * 12


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    known_clean.forget()
    yield
    known_clean.forget()


def test_a_key_next_to_a_remembered_prompt_is_still_redacted() -> None:
    redactor = Redactor()
    assert redactor.body({"system": PROMPT, "messages": [{"content": "hi"}]}) == {
        "system": PROMPT,
        "messages": [{"content": "hi"}],
    }
    assert known_clean.remembered() == len(PROMPT)
    key = "sk-ant-api03-abcDEF123456ghiJKL789"
    body = redactor.body({"system": PROMPT, "messages": [{"content": f"my key is {key}"}]})
    assert key not in str(body)
    assert body["system"] == PROMPT


def test_a_prompt_clean_for_one_client_is_scanned_again_for_a_client_with_other_credentials() -> None:
    token = "house-token-7f3a9c2e"  # no built-in shape: only a learned credential finds it
    prompt = PROMPT + f" Use {token} for the ledger."
    assert Redactor().body({"system": prompt}) == {"system": prompt}  # nothing learned: clean

    client = Redactor()
    client.learn(token)  # as from this client's authorization header
    body = client.body({"system": prompt})
    assert token not in body["system"]
    assert "<REDACTED:api-key>" in body["system"]


def test_a_long_prompt_holding_a_key_is_redacted_on_every_call() -> None:
    key = "sk-proj-abcDEF123456ghiJKL789mnoPQR"
    prompt = PROMPT + f" The key is {key}."
    redactor = Redactor()
    for _ in range(3):
        assert key not in redactor.body({"system": prompt})["system"]


def test_remembered_text_stays_bounded() -> None:
    for i in range(40):
        known_clean.remember([f"{i:04d}" + "x" * (known_clean.LONG * 800)], ())
    assert 0 < known_clean.remembered() <= 8 << 20


def test_a_prompt_checked_for_two_clients_in_turn_is_known_for_both_but_not_for_a_third() -> None:
    first, second = Redactor(), Redactor()
    first.learn("first-client-key-123")
    second.learn("second-client-key-456")
    for redactor in (first, second):
        assert redactor.body({"system": PROMPT}) == {"system": PROMPT}
    both = Redactor()
    both.learn("first-client-key-123")
    both.learn("second-client-key-456")
    assert both.body({"system": PROMPT}) == {"system": PROMPT}
    third = Redactor()
    third.learn("You review quarterly")  # a credential that happens to be in the prompt: scanned again
    assert "<REDACTED:api-key>" in third.body({"system": PROMPT})["system"]
