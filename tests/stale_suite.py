"""A sample suite of LLM tests with staged staleness, for the re-record planner, the record budget and
``llmvcr verify``: each test makes two calls (Anthropic for even cases, OpenAI for odd ones) against
the loopback server, and ``stage.json`` beside the tests changes what they send.

    python tests/stale_suite.py OUT [N]   builds an N-test suite (default 24) in OUT, records it,
                                          stages the staleness and prints the plan, the verify report
                                          and a budgeted re-record
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

TESTS = """
import json, os, pathlib, anthropic, openai, pytest
URL = os.environ["LLM_URL"]
STAGE_FILE = pathlib.Path(__file__).with_name("stage.json")
STAGE = json.loads(STAGE_FILE.read_text()) if STAGE_FILE.exists() else {}
CASES = [f"case{i:02d}" for i in range(int(os.environ.get("SUITE_SIZE", "24")))]


def ask(case, text, stream=False):
    if int(case[4:]) % 2 == 0:
        client = anthropic.Anthropic(api_key="sk-ant-suite-key-000", base_url=URL, max_retries=0)
        messages = [{"role": "user", "content": text}]
        if stream:
            with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=messages) as s:
                return s.get_final_text()
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=messages)
        return reply.content[0].text
    client = openai.OpenAI(api_key="sk-proj-suite-key-000", base_url=URL + "/v1", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


@pytest.mark.llmvcr
@pytest.mark.parametrize("case", CASES)
def test_case(case):
    report = f"Summarise report {case}: " + "quarterly figures, risks and outlook. " * 150
    prompt = STAGE.get("prompts", {}).get(case, report)
    assert ask(case, prompt).startswith("Echo: ")
    if case not in STAGE.get("drop_second", []):
        ask(case, f"List three follow-up questions on {case}", stream=True)
"""


def cassette(root: Path, case: str) -> Path:
    return root / "cassettes" / "test_suite" / f"test_case[{case}].yaml"


def build(root: Path) -> None:
    """Write the suite into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "test_suite.py").write_text(TESTS)
    (root / "conftest.py").write_text("")


def backdate(path: Path, days: float) -> None:
    """Move a cassette's recording date ``days`` into the past."""
    when = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(re.sub(r"(?m)^  at: '[^']*'$", f"  at: '{when}'", path.read_text()))


def stage(
    root: Path,
    *,
    expired: Sequence[str] = (),
    diverging: Sequence[str] = (),
    unplayed: Sequence[str] = (),
    missing: Sequence[str] = (),
) -> None:
    """Make cassettes stale: 90 days old, prompts changed, second calls dropped, files deleted."""
    for case in expired:
        backdate(cassette(root, case), 90)
    for case in missing:
        cassette(root, case).unlink()
    document = {
        "prompts": {case: f"Summarise report {case} in one line" for case in diverging},
        "drop_second": list(unplayed),
    }
    (root / "stage.json").write_text(json.dumps(document))


def drift(event: str | None, payload: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """The live API changed since the recording: a field added, one removed, a type changed (answers
    without a stream), and a new stream event type (streams)."""
    if event is None and payload.get("object") == "chat.completion":
        changed = dict(payload, service_tier="default")
        changed.pop("system_fingerprint", None)
        return [(None, changed)]
    if event is None and payload.get("type") == "message":
        usage = dict(payload["usage"], input_tokens=str(payload["usage"]["input_tokens"]))
        return [(None, dict(payload, usage=usage))]
    if event == "message_stop":
        return [("message_citations", {"type": "message_citations", "citations": []}), (event, payload)]
    return [(event, payload)]


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *args]


def main(argv: Sequence[str]) -> int:
    """Build, record and stage a suite, then show the plan, the verify report and a budgeted re-record."""
    sys.path.insert(0, str(Path(__file__).parent))
    from llm_server import LLMServer

    root = Path(argv[0]).resolve()
    size = int(argv[1]) if len(argv) > 1 else 24
    build(root)
    with LLMServer() as server:
        env = {**os.environ, "LLM_URL": server.url, "SUITE_SIZE": str(size)}
        env.update(ANTHROPIC_API_KEY="sk-ant-verify-000", OPENAI_API_KEY="sk-proj-verify-000")  # verify's
        env.pop("CI", None)

        def run(command: list[str], title: str) -> None:
            print(f"\n$ {' '.join(command[2:] if command[0] == sys.executable else command)}   # {title}")
            done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
            print(done.stdout.rstrip())
            print(f"(exit status {done.returncode})")

        subprocess.run(pytest_command(), cwd=root, env=env, check=True, capture_output=True)
        cases = [f"case{i:02d}" for i in range(size)]
        stage(root, expired=cases[0:5], diverging=cases[5:9], unplayed=cases[9:13], missing=cases[13:16])
        calls = server.request_count
        run(
            [sys.executable, "-m", "llmvcr", "plan", "-q", "-p", "no:randomly", "--llmvcr-max-age=30d"],
            "the plan",
        )
        print(f"(the plan made {server.request_count - calls} live calls)")
        server.drift = drift
        drifted = [str(cassette(root, c)) for c in cases[16:20]]
        run(
            [
                sys.executable,
                "-m",
                "llmvcr",
                "verify",
                *drifted,
                "--base-url",
                server.url,
                "--junit-xml",
                str(root / "verify.xml"),
            ],
            "verify, with the server's answers changed",
        )
        server.drift, server.fail_status = None, 529
        run(
            [sys.executable, "-m", "llmvcr", "verify", drifted[0], "--base-url", server.url],
            "verify, with the API overloaded",
        )
        server.fail_status = None
        calls = server.request_count
        run(
            pytest_command(
                "--llmvcr-record-mode=all", "--llmvcr-record-budget=0.05", *["-k", " or ".join(cases[:12])]
            ),
            "a budgeted re-record",
        )
        print(f"(the budgeted re-record made {server.request_count - calls} live calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
