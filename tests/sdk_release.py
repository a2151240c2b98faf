"""A simulated SDK release for ``test_internals.py``: one private name renamed across its package.

Run as ``python tests/sdk_release.py '<json>'`` in a fresh process. Before llmvcr or the SDK is
imported, an import hook rewrites the package's source as a release would: the name is renamed
at its definition and at every use inside the package (a module is moved under a new name), so the
SDK itself still works and only llmvcr's reference dangles. The script then opens cassettes,
records plain, streamed and async calls against the loopback server, replays them, replays a
cassette recorded before the rename, and does the same with another SDK. It prints what happened
as JSON on its last line: each call's value or the error it raised, and every ``SDKChangedWarning``.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

ANTHROPIC_KEY = "sk-ant-api03-SENTINEL-release-0000000000"
OPENAI_KEY = "sk-proj-SENTINEL-release-0000000000000000"
GOOGLE_KEY = "SENTINEL-google-release-0000"


class Rename(NamedTuple):
    """How a release renames one name: source rewrites in some modules, and a module moved."""

    package: str  # the import package whose modules are rewritten ("anthropic", "google.genai")
    rewrites: tuple[tuple[str, str], ...]  # (regex, replacement), applied in every module that matches
    only: str = ""  # a regex a module's name must match to be rewritten ("" for all)
    span: str = ""  # a class whose body alone is rewritten ("" for the whole module)
    moved: tuple[str, str] = ("", "")  # (old module, new module): the file now imports as the new name
    # another package's uses of the name, renamed with it (google-genai reads aiohttp's ``_request``)
    also: tuple[tuple[str, str, str], ...] = ()  # (package, regex, replacement)


RESPONSES = r"\.responses\.responses$"
FRAMEWORKS = ("google", "aiohttp", "dspy")  # families whose packages only the frameworks suite installs
OWN_SUITES = ("mcp",)  # families renamed by a suite of their own (tests/mcp/test_internals_mcp.py)


def stainless(package: str) -> dict[str, Rename]:
    return {
        "stainless.module": Rename(
            package,
            ((r"\b_base_client\b", "_base_client_moved"),),
            moved=(f"{package}._base_client", f"{package}._base_client_moved"),
        ),
        "stainless.sync_request": Rename(
            package,
            ((r"\bdef request\(", "def send_request("), (r"\bself\.request\(", "self.send_request(")),
            only=r"\._base_client$",
            span="SyncAPIClient",
        ),
        "stainless.async_request": Rename(
            package,
            (
                (r"\bdef request\(", "def send_request("),
                (r"\bself\.request\(", "self.send_request("),
                (r"\bself\._client\.request\(", "self._client.send_request("),
            ),
            only=r"\._base_client$",
            span="AsyncAPIClient|AsyncPaginator",
        ),
        "stainless.build_request": Rename(package, ((r"\b_build_request\b", "_build_request_v2"),)),
        "stainless.build_headers": Rename(package, ((r"\b_build_headers\b", "_build_headers_v2"),)),
        "stainless.prepare_url": Rename(
            package, ((r"\b_prepare_url\b", "_prepare_url_v2"),), only=r"^(?!.*\.responses\.responses$)"
        ),
        "stainless.http_client": Rename(
            package,
            (
                (r"(?<=\.)_client\b(?!\s+import|[\"'])", "_http_client"),
                (r"(?m)^(\s+)_client:", r"\1_http_client:"),
            ),
        ),
        "stainless.dumps": Rename(package, ((r"\bopenapi_dumps\b", "openapi_dumps_v2"),)),
        "stainless.json_data": Rename(package, ((r"\bjson_data\b", "json_body"),)),
        "stainless.extra_json": Rename(package, ((r"\bextra_json\b", "extra_body_json"),)),
        "stainless.stream_events": Rename(
            package, ((r"\b_iter_events\b", "_read_events"),), only=r"\._streaming$", span="Stream"
        ),
        "stainless.async_stream_events": Rename(
            package, ((r"\b_iter_events\b", "_read_events"),), only=r"\._streaming$", span="AsyncStream"
        ),
    }


RENAMES: dict[str, dict[str, Rename]] = {
    "anthropic": stainless("anthropic"),
    "openai": stainless("openai"),
    "openai_ws": {
        "openai.connect_ws": Rename("openai", ((r"\b_connect_ws\b", "_open_ws"),), only=RESPONSES),
        "openai.ws_url": Rename("openai", ((r"\b_prepare_url\b", "_ws_url"),), only=RESPONSES),
        "openai.ws_client": Rename("openai", ((r"\b__client\b", "__owner"),), only=RESPONSES),
    },
    "google": {
        "google.module": Rename(
            "google.genai", ((r"\b_api_client\b", "_api_client_moved"),),
            moved=("google.genai._api_client", "google.genai._api_client_moved"),
        ),
        "google.request": Rename("google.genai", ((r"(?<!ClientSession\.)\b_request\b", "_request_v2"),)),
        "google.async_request": Rename("google.genai", ((r"\b_async_request\b", "_async_request_v2"),)),
        "google.api_client": Rename(
            "google.genai", ((r"(?<=self\.)_api_client\b", "_api_client_v2"),), only=r"\.client$"
        ),
    },
    "dspy": {
        "dspy.lm15": Rename(
            "dspy", ((r"\b_vendor\.lm15\b", "_vendor.lm15_moved"),),
            moved=("dspy._vendor.lm15", "dspy._vendor.lm15_moved"),
        ),
    },
    "mcp": {  # renamed by tests/mcp/test_internals_mcp.py (its own environment installs mcp)
        "mcp.stdio.spawn": Rename("mcp", ((r"\b_create_platform_compatible_process\b", "_spawn_server_v2"),)),
        "mcp.http.writer": Rename("mcp", ((r"\bpost_writer\b", "post_writer_v2"),)),
        "mcp.http.get_stream": Rename("mcp", ((r"\bhandle_get_stream\b", "handle_get_stream_v2"),)),
        "mcp.sse.source": Rename("mcp", ((r"\bsse_within_origin\b", "sse_within_origin_v2"),)),
        "mcp.sse.post": Rename("mcp", ((r"\brequest_within_origin\b", "request_within_origin_v2"),)),
    },
    "aiohttp": {
        "aiohttp.request": Rename(
            "aiohttp", ((r"\b_request\b", "_request_v2"),),
            also=(("google.genai", r"\bClientSession\._request\b", "ClientSession._request_v2"),),
        ),
        "aiohttp.build_url": Rename("aiohttp", ((r"\b_build_url\b", "_build_url_v2"),)),
        "aiohttp.headers": Rename("aiohttp", ((r"\b_headers\b", "_hdrs_v2"),)),
        "aiohttp.raw_headers": Rename("aiohttp", ((r"\b_raw_headers\b", "_raw_hdrs_v2"),)),
    },
}  # fmt: skip


# Releases that rename an instance attribute where it is set and read, yet leave the class's own
# declaration of it (an annotation) in place: a check of the class alone still finds the name.
INSTANCE_KINDS = ("instance", "init")
INSTANCE_RENAMES: dict[str, dict[str, Rename]] = {
    family: {
        "stainless.http_client": Rename(
            family, ((r"(?<=\.)_client\b(?!\s+import|[\"'])", "_transport_client"),)
        )
    }
    for family in ("anthropic", "openai")
}
INSTANCE_RENAMES["openai_ws"] = {  # set in __init__ only: renaming the use renames the attribute
    "openai.ws_client": Rename("openai", ((r"(?<=self\.)__client\b", "__owner"),), only=RESPONSES)
}
INSTANCE_RENAMES["google"] = {  # genai.Client annotates nothing: the same release as in RENAMES
    "google.api_client": RENAMES["google"]["google.api_client"]
}


class Release(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads the package's modules from their own files, rewritten by ``rename``."""

    def __init__(self, rename: Rename) -> None:
        self.rename = rename
        self.rewritten: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> Any:
        rename = self.rename
        also = [(regex, repl) for package, regex, repl in rename.also if _inside(fullname, package)]
        if also:
            rename = Rename(fullname, tuple(also))
        elif not _inside(fullname, rename.package):
            return None
        old, new = rename.moved
        if old and fullname == old:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)  # moved away
        real_name = old if new and fullname == new else fullname
        parent = real_name.rpartition(".")[0]
        spec = importlib.machinery.PathFinder.find_spec(
            real_name, sys.modules[parent].__path__ if parent else None
        )
        if spec is None or not str(spec.origin).endswith(".py"):
            return None
        source = Path(str(spec.origin)).read_text(encoding="utf-8")
        new_source = (
            self._rewrite(source, rename) if not rename.only or re.search(rename.only, real_name) else source
        )
        if new_source == source and fullname == real_name:
            return None  # untouched: the usual import (and its bytecode cache)
        out = importlib.util.spec_from_file_location(
            fullname, spec.origin, loader=self, submodule_search_locations=spec.submodule_search_locations
        )
        assert out is not None
        out.loader_state = new_source
        self.rewritten.append(fullname)
        return out

    def _rewrite(self, source: str, rename: Rename) -> str:
        if not rename.span:
            for pattern, repl in rename.rewrites:
                source = re.sub(pattern, repl, source)
            return source
        out, last = [], 0
        for match in re.finditer(rf"(?m)^class ({rename.span})\b.*?(?=^\S|\Z)", source, re.S):
            out.append(source[last : match.start()])
            body = match.group(0)
            for pattern, repl in rename.rewrites:
                body = re.sub(pattern, repl, body)
            out.append(body)
            last = match.end()
        out.append(source[last:])
        return "".join(out)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        spec = module.__spec__
        code = compile(spec.loader_state, spec.origin, "exec")
        exec(code, module.__dict__)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# -- the calls ------------------------------------------------------------------------------------
def outcome(call: Callable[[], Any]) -> list[Any]:
    """``["ok", value]`` or ``[error class name, message]``."""
    try:
        return ["ok", call()]
    except Exception as err:
        return [type(err).__name__, str(err)]


def anthropic_calls(url: str) -> dict[str, Callable[[], Any]]:
    import anthropic

    client = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=url, max_retries=0)
    aclient = anthropic.AsyncAnthropic(api_key=ANTHROPIC_KEY, base_url=url, max_retries=0)
    ask = {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": "hi release"}]}

    def stream() -> str:
        with client.messages.stream(**ask) as s:
            return s.get_final_message().content[0].text  # type: ignore[union-attr]

    async def plain_async() -> str:
        message = await aclient.messages.create(**ask)
        return message.content[0].text  # type: ignore[union-attr]

    return {
        "plain": lambda: client.messages.create(**ask).content[0].text,  # type: ignore[union-attr]
        "stream": stream,
        "async": lambda: asyncio.run(plain_async()),
    }


def openai_calls(url: str) -> dict[str, Callable[[], Any]]:
    import openai

    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=url + "/v1", max_retries=0)
    aclient = openai.AsyncOpenAI(api_key=OPENAI_KEY, base_url=url + "/v1", max_retries=0)
    ask: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi release"}]}

    def stream() -> str:
        chunks = client.chat.completions.create(**ask, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    async def plain_async() -> str | None:
        completion = await aclient.chat.completions.create(**ask)
        return completion.choices[0].message.content

    return {
        "plain": lambda: client.chat.completions.create(**ask).choices[0].message.content,
        "stream": stream,
        "async": lambda: asyncio.run(plain_async()),
    }


def openai_ws_calls(ws_url: str) -> dict[str, Callable[[], Any]]:
    import openai

    kw: dict[str, Any] = {
        "api_key": OPENAI_KEY,
        "base_url": "http://127.0.0.1:9/v1",
        "websocket_base_url": ws_url + "/v1",
        "max_retries": 0,
    }
    client, aclient = openai.OpenAI(**kw), openai.AsyncOpenAI(**kw)

    def turn() -> str:
        with client.responses.connect() as conn:
            conn.response.create(model="gpt-test", input="hello socket")
            for event in conn:
                if event.type == "response.completed":
                    return event.response.output_text
        return ""

    async def aturn() -> str:
        async with aclient.responses.connect() as conn:
            await conn.response.create(model="gpt-test", input="hello async socket")
            async for event in conn:
                if event.type == "response.completed":
                    return event.response.output_text
        return ""

    turn.client = client  # type: ignore[attr-defined] # what an adapter binds
    return {"plain": turn, "async": lambda: asyncio.run(aturn())}


def google_calls(url: str) -> dict[str, Callable[[], Any]]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key=GOOGLE_KEY, http_options=types.HttpOptions(base_url=url))
    model = "gemini-2.5-flash"

    def stream() -> str:
        return "".join(
            c.text or "" for c in client.models.generate_content_stream(model=model, contents="hi")
        )

    async def plain_async() -> str | None:
        return (await client.aio.models.generate_content(model=model, contents="hi async")).text

    def plain() -> str | None:
        return client.models.generate_content(model=model, contents="hi release").text

    plain.client = client  # type: ignore[attr-defined] # what an adapter binds
    return {
        "plain": plain,
        "stream": stream,
        "async": lambda: asyncio.run(plain_async()),
    }


def dspy_calls(url: str) -> dict[str, Callable[[], Any]]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the model list
    import dspy

    lm = dspy.LM("openai/gpt-4o", api_base=url + "/v1", api_key=OPENAI_KEY, cache=False)

    async def plain_async() -> Any:
        return await lm.acall("hi async dspy")

    return {"plain": lambda: lm("hi dspy"), "async": lambda: asyncio.run(plain_async())}


def calls_for(sdk: str, urls: dict[str, str]) -> dict[str, Callable[[], Any]]:
    if sdk == "anthropic":
        return anthropic_calls(urls["http"])
    if sdk == "openai":
        return openai_calls(urls["http"])
    if sdk == "openai_ws":
        return openai_ws_calls(urls["ws"])
    if sdk == "dspy":
        return dspy_calls(urls["http"])
    return google_calls(urls["http"])  # google, and aiohttp (google-genai's async client sends through it)


@contextmanager
def no_network() -> Iterator[list[Any]]:
    """Every socket connection refused and counted: a replay that reached the network is seen."""
    attempts: list[Any] = []
    real = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise ConnectionRefusedError(f"network blocked: {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]


def record_and_replay(sdk: str, urls: dict[str, str], folder: Path, before: str) -> dict[str, Any]:
    """Open a cassette, record every call, replay it, replay the cassette recorded before the release."""
    import llmvcr

    calls = calls_for(sdk, urls)
    out: dict[str, Any] = {"outside": outcome(calls["plain"])}  # no cassette: the SDK itself still works
    path = folder / f"{sdk}-after.yaml"
    try:
        with llmvcr.use_cassette(str(path), record_mode="all"):
            out["record"] = {name: outcome(call) for name, call in calls.items()}
    except Exception as err:  # opening or closing the cassette itself
        out["record"] = {"open": [type(err).__name__, str(err)]}
    for what, cassette in (("replay", path), ("before", Path(before))):
        with no_network() as attempts:
            try:
                with llmvcr.use_cassette(str(cassette), record_mode="none", allow_playback_repeats=True):
                    out[what] = {name: outcome(call) for name, call in calls.items()}
            except Exception as err:
                out[what] = {"open": [type(err).__name__, str(err)]}
        out[what + "_network"] = len(attempts)
    return out


def main() -> None:
    args = json.loads(sys.argv[1])
    renames = INSTANCE_RENAMES if args.get("instance") else RENAMES
    release = Release(renames[args["family"]][args["key"]])
    sys.meta_path.insert(0, release)
    seen: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import llmvcr  # after the release is in place, as in a user's test run

        folder = Path(args["folder"])
        result: dict[str, Any] = {
            "target": record_and_replay(args["sdk"], args["urls"], folder, args["before"])
        }
        if args.get("adapter"):
            calls = calls_for(args["sdk"], args["urls"])
            with no_network() as attempts:
                plain = calls["plain"]

                def adapted() -> Any:  # building the adapter may be where the error is
                    llmvcr.create_replay_adapter(args["before"], plain.client)  # type: ignore[attr-defined]
                    return plain()

                result["adapter"] = outcome(adapted)
            result["adapter_network"] = len(attempts)
        other = args["other"]
        result["other"] = record_and_replay(other, args["urls"], folder, args["other_before"])
    from llmvcr.errors import SDKChangedWarning

    seen = [str(w.message) for w in caught if issubclass(w.category, SDKChangedWarning)]
    result["warnings"] = seen
    result["rewritten"] = release.rewritten
    print(json.dumps(result))


# -- the test's side: run a release in a fresh process, check its outcome --------------------------
SDK = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai_ws": "openai_ws",
    "google": "google",
    "aiohttp": "google",
    "dspy": "dspy",
}
DIST = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai_ws": "openai",
    "google": "google-genai",
    "aiohttp": "aiohttp",
    "dspy": "dspy",
}
# the calls that pass through a name whose outcome is an error (google-genai's async client sends
# through aiohttp, its sync one through httpx2)
# names whose outcome is an error for the explicit adapters alone: use_cassette goes on as before
ADAPTER_ONLY = {"google.api_client"}
ERRING = {"openai_ws": {"plain", "async"}, "aiohttp": {"async"}, "dspy": {"plain", "async"}}


def record_before(urls: dict[str, str], sdks: Sequence[str], folder: Path) -> dict[str, Any]:
    """Cassettes recorded with the SDKs as installed, before any release: path and what each call gave."""
    import llmvcr

    out: dict[str, Any] = {"urls": urls}
    for sdk in sdks:
        path = folder / f"{sdk}.yaml"
        with llmvcr.use_cassette(str(path), record_mode="all") as cassette:
            values = {name: call() for name, call in calls_for(sdk, urls).items()}
        assert len(cassette.entries) == len(values) and path.exists(), (sdk, cassette.entries)
        out[sdk] = (str(path), values)
    return out


def run_release(
    family: str, key: str, before: dict[str, Any], folder: Path, instance: bool = False
) -> dict[str, Any]:
    sdk = SDK[family]
    other = "openai" if sdk == "anthropic" else "anthropic"
    args = {
        "family": family,
        "key": key,
        "sdk": sdk,
        "other": other,
        "urls": before["urls"],
        "folder": str(folder),
        "before": before[sdk][0],
        "other_before": before[other][0],
        "adapter": key == "openai.ws_client" or key in ADAPTER_ONLY,
        "instance": instance,
    }
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), str(here)])}
    done = subprocess.run(
        [sys.executable, str(here / "sdk_release.py"), json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def names_it(message: str, key: str, dist: str) -> None:
    """The message names the package, its version, the name and the remedy."""
    from importlib.metadata import version as installed

    from llmvcr.providers import _internals

    version = installed(dist)
    assert f"{dist} {version}" in message, message
    assert _internals.declared(key).where.rpartition(".")[2].rpartition(":")[2] in message, message
    assert f"Pin {dist}<{version} or upgrade llmvcr" in message, message


def check_release(
    family: str, key: str, before: dict[str, Any], folder: Path, instance: bool = False
) -> None:
    """Assert the outcome the registry declares for ``key`` after a release renamed it (``instance``:
    renamed on the objects alone, see ``INSTANCE_RENAMES``)."""
    from llmvcr.providers import _internals

    internal = _internals.declared(key)
    dist = DIST[family]
    result = run_release(family, key, before, folder, instance)
    target, sdk = result["target"], SDK[family]
    assert result["rewritten"], "the simulated release renamed nothing"
    expected = before[sdk][1]
    assert target["outside"] == ["ok", expected["plain"]]  # the renamed SDK itself still works

    # the other SDK's cassettes are untouched: it records, replays, and replays what it had
    other = result["other"]
    other_expected = before["anthropic" if sdk != "anthropic" else "openai"][1]
    for what in ("record", "replay", "before"):
        assert other[what] == {name: ["ok", value] for name, value in other_expected.items()}, (what, other)
    assert other["replay_network"] == other["before_network"] == 0

    assert target["replay_network"] == target["before_network"] == 0  # nothing replayed went live
    erring = ERRING.get(family, set()) if internal.outcome == _internals.ERROR else set()
    for what in ("record", "before", *(("replay",) if "open" not in target["replay"] else ())):
        for name, value in expected.items():
            assert name in target[what], (what, name, target)  # every call shape got an answer or an error
            got = target[what][name]
            if name in erring:  # one clear error at the call, naming package, version, name and remedy
                assert got[0] == "SDKChangedError", (what, name, got)
                names_it(got[1], key, dist)
            else:
                assert got == ["ok", value], (what, name, got)
    if internal.outcome == _internals.FALLBACK:
        assert "open" not in target["replay"], target["replay"]
        # said once for each place it is missing from (GA and beta modules), however many cassettes open
        assert result["warnings"] and len(set(result["warnings"])) == len(result["warnings"])
        for warning in result["warnings"]:
            names_it(warning, key, dist)
    elif key in ADAPTER_ONLY:
        assert not result["warnings"], result["warnings"]
    else:
        assert erring and not result["warnings"], result["warnings"]
    if (
        key == "openai.ws_client" or key in ADAPTER_ONLY
    ):  # an adapted client cannot be told: refused, not live
        assert result["adapter"][0] == "SDKChangedError", result["adapter"]
        names_it(result["adapter"][1], key, dist)
        assert result["adapter_network"] == 0


if __name__ == "__main__":
    main()
