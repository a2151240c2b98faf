"""Interception leaves every SDK exactly as it was: only llmvcr's own wrappers are removed."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
import userlib
import wrapt

import llmvcr
from llmvcr.providers import installed, unregister_provider


@pytest.mark.filterwarnings(
    "ignore::llmvcr.errors.EmptyRecordingWarning"
)  # cassettes opened for their patching only
def test_leaving_a_cassette_keeps_another_librarys_wrapper(openai_client: Any) -> None:
    """An APM agent wraps httpx2.Client.send while a cassette is open; closing the cassette keeps it."""
    original = httpx2.Client.__dict__["send"]
    seen: list[str] = []

    def apm(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        seen.append(str(args[0].url))
        return wrapped(*args, **kwargs)

    with llmvcr.recording("apm"):
        handle = wrapt.wrap_function_wrapper(httpx2.Client, "send", apm)
        openai_client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
    try:
        assert not installed()
        assert httpx2.Client.__dict__["send"] is handle  # the agent's wrapper is still the attribute
        assert handle.__wrapped__ is original  # and llmvcr's, once under it, is gone from the chain
        openai_client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        assert len(seen) == 2  # it goes on observing after the cassette closed
    finally:
        wrapt.unwrap_object(httpx2.Client, "send", handle)
    assert httpx2.Client.__dict__["send"] is original


@pytest.mark.filterwarnings(
    "ignore::llmvcr.errors.EmptyRecordingWarning"
)  # cassettes opened for their patching only
def test_leaving_a_cassette_keeps_a_wrapper_on_the_sdk_funnel(anthropic_client: Any) -> None:
    import anthropic._base_client as base

    original = base.SyncAPIClient.__dict__["request"]
    calls: list[int] = []

    def tracer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        calls.append(1)
        return wrapped(*args, **kwargs)

    with llmvcr.recording("tracer"):
        handle = wrapt.wrap_function_wrapper(base.SyncAPIClient, "request", tracer)
    try:
        assert base.SyncAPIClient.__dict__["request"] is handle
        assert handle.__wrapped__ is original
        anthropic_client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert calls == [1]
    finally:
        wrapt.unwrap_object(base.SyncAPIClient, "request", handle)


def test_patching_an_inherited_method_leaves_the_subclass_as_it_was(cassette_dir: Any) -> None:
    gc.collect()  # an adapter's client another test dropped releases its interception when collected
    assert not installed(), "interception is still in place from an earlier test: a cassette left open"
    before = dict(vars(userlib.SubGateway))
    provider = llmvcr.patch_function("userlib:SubGateway.m")
    try:
        with llmvcr.recording("inherited"):
            assert "m" in vars(userlib.SubGateway)  # the wrapper sits on the subclass while open
            assert userlib.SubGateway().m("hi") == "HI"
        assert dict(vars(userlib.SubGateway)) == before
        assert userlib.SubGateway.m is userlib.BaseGateway.m
        with llmvcr.recording("inherited", record_mode="none"):
            assert userlib.SubGateway().m("hi") == "HI"  # replayed
    finally:
        unregister_provider(provider.name)
    assert dict(vars(userlib.SubGateway)) == before


@pytest.mark.filterwarnings(
    "ignore::llmvcr.errors.EmptyRecordingWarning"
)  # cassettes opened for their patching only
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_reopening_cassettes_keeps_another_librarys_wrapper_put_on_between_them(openai_client: Any) -> None:
    """A cassette reopened many times reuses its wrappers; one added between two cassettes, or while
    one is open, is still left exactly in place."""
    original = httpx2.Client.__dict__["send"]
    for _ in range(3):  # the fast path: the same wrapper object back on, the original back off
        with llmvcr.recording("reopen"):
            assert httpx2.Client.__dict__["send"] is not original
        assert httpx2.Client.__dict__["send"] is original
    seen: list[str] = []

    def apm(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        seen.append(str(args[0].url))
        return wrapped(*args, **kwargs)

    handle = wrapt.wrap_function_wrapper(httpx2.Client, "send", apm)  # between two cassettes
    try:
        with llmvcr.recording("reopen"):
            inner = wrapt.wrap_function_wrapper(httpx2.Client, "send", apm)  # and while one is open
            openai_client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "hi"}]
            )
        assert httpx2.Client.__dict__["send"] is inner
        assert inner.__wrapped__ is handle and handle.__wrapped__ is original
        with llmvcr.recording("reopen"):
            pass
        assert httpx2.Client.__dict__["send"] is inner and inner.__wrapped__ is handle
        assert len(seen) == 2
    finally:
        wrapt.unwrap_object(httpx2.Client, "send", inner)
        wrapt.unwrap_object(httpx2.Client, "send", handle)
    assert httpx2.Client.__dict__["send"] is original
    with llmvcr.recording("reopen"):
        assert httpx2.Client.__dict__["send"] is not original
    assert httpx2.Client.__dict__["send"] is original


class _Broken:
    """A provider whose interception fails to go on (a bug, or an SDK that changed under it)."""

    name = "broken-install"

    def sdk_version(self) -> str | None:
        return None

    def install(self) -> None:
        raise RuntimeError("cannot patch")

    def uninstall(self) -> None:
        pass


def test_an_install_that_fails_leaves_nothing_half_applied(anthropic_client: Any) -> None:
    original = httpx2.Client.__dict__["send"]
    llmvcr.register_provider(_Broken())
    try:
        try:
            with llmvcr.recording("broken"):
                pass
        except RuntimeError:
            pass
        else:
            raise AssertionError("the failing install did not surface")
        assert not installed()  # the count went back: the next cassette starts from scratch
        assert httpx2.Client.__dict__["send"] is original  # what went on before the failure came off
    finally:
        unregister_provider("broken-install")
    with llmvcr.recording("after"):  # and every other SDK's cassettes work as before
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert not installed() and httpx2.Client.__dict__["send"] is original


def test_a_funnel_that_is_not_there_is_said_once_and_harms_no_cassette(anthropic_client: Any) -> None:
    import warnings

    provider = llmvcr.register_provider(
        llmvcr.providers.HttpProvider("renamed", "json", sync_funnels=("json:JSONDecoder.gone_in_a_release",))
    )
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for name in ("one", "two"):
                with llmvcr.recording(name):
                    anthropic_client.messages.create(
                        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
                    )
        said = [str(w.message) for w in caught if issubclass(w.category, llmvcr.SDKChangedWarning)]
        assert len(said) == 1 and "json:JSONDecoder.gone_in_a_release" in said[0]
    finally:
        unregister_provider(provider.name)
    assert not installed()


NESTED_SUITE = '''
import os, sys
import llmvcr
from sdk_release import calls_for

pytest_plugins = ["pytester"]
URLS = {"http": os.environ["LLM_URL"], "ws": os.environ["WS_URL"]}


def test_a_nested_run_records_a_chat_call(pytester):
    pytester.makepyfile(test_inner="""
import os
import llmvcr
from sdk_release import calls_for
def test_it(tmp_path):
    urls = {"http": os.environ["LLM_URL"], "ws": os.environ["WS_URL"]}
    with llmvcr.use_cassette(str(tmp_path / "chat.yaml"), record_mode="all") as cassette:
        calls_for("openai", urls)["plain"]()
    assert len(cassette.entries) == 1
""")
    assert "openai.resources.responses.responses" not in sys.modules
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)  # restores sys.meta_path


def test_then_a_socket_recorded_here_is_recorded(tmp_path):
    path = tmp_path / "socket.yaml"
    with llmvcr.use_cassette(str(path), record_mode="all") as cassette:
        assert calls_for("openai_ws", URLS)["plain"]() == "Echo: hello socket"
    assert len(cassette.entries) == 1 and path.exists()
'''


@pytest.mark.slow
def test_a_module_imported_again_after_an_in_process_pytest_run_is_still_intercepted(
    pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytester's in-process runs restore sys.modules and sys.meta_path, taking away an import hook
    first put there during the run: the openai socket API imported after it must still be
    intercepted (its calls went out unrecorded, with no word, before)."""
    pytest.importorskip("websockets")  # the socket API's server; not in the oldest job's pins
    from llm_server import ResponsesWebSocketServer

    ws = ResponsesWebSocketServer().start()
    try:
        pytester.makepyfile(test_nested=NESTED_SUITE)
        here = Path(__file__).resolve().parent.parent
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(here.parent), str(here)]))
        monkeypatch.setenv("LLM_URL", server.url)
        monkeypatch.setenv("WS_URL", ws.url)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", timeout=120)
    finally:
        ws.stop()
    result.assert_outcomes(passed=2)
