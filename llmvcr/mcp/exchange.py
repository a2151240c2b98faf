"""One MCP connection inside a cassette: replayed from it, or recorded into it, whole.

A connection is decided once, as it opens: it replays when the cassette holds traffic for its
server (and is not being re-recorded), else it goes live when the cassette may record, else it
fails there, before any process is started or socket opened. A replayed connection never turns
live half-way: the server was never started, so a request the cassette does not answer is
answered with a JSON-RPC error carrying the ``ReplayDivergence`` message.

``tool_policy`` applies to ``tools/call`` by ``params.name``: a ``deny`` call is answered with a
JSON-RPC error carrying the ``ToolDeniedError`` message, and nothing is sent or recorded; a ``live``
tool needs its server, so a connection whose recorded ``tools/list`` lists a ``live`` tool opens
live (its other requests still matched), and a ``live`` call in a replayed connection is answered
with an error saying why.

The transports (``mcp.stdio``, ``mcp.http``, ``llmvcr mcp``) hand every JSON-RPC message to an
:class:`Exchange` as a plain object: :meth:`Exchange.from_client` for what the client sends,
:meth:`Exchange.from_server` for what the live server sends. Replay answers with the messages
the client is to receive now; the SDK's own ``ClientSession`` parses them.
"""

from __future__ import annotations

import time
import warnings
from collections import deque
from typing import Any

from ..cassette.entries import Request
from ..errors import ReplayDivergence, ToolDeniedError
from ..providers.base import package_version
from ..providers.tool import check_tool_policy
from ..session import Decision, Session
from ..wire import mcp as wire

JSON = dict[str, Any]


class MCPProvider:
    """The provider the session sees MCP entries come through."""

    name = wire.NAME
    package = "mcp"

    def sdk_version(self) -> str | None:
        return package_version("mcp")

    def install(self) -> None:  # the seams are installed by ``llmvcr.mcp.seam``
        pass

    def uninstall(self) -> None:
        pass


PROVIDER = MCPProvider()


class NothingRecordedError(ReplayDivergence):
    """A replay-only cassette holds nothing for an MCP server that is being opened."""


class _Turn:
    """A live client request in flight, and what arrived meanwhile."""

    __slots__ = ("decision", "events", "start")

    def __init__(self, decision: Decision | None, start: float) -> None:
        self.decision, self.start = decision, start
        self.events: list[JSON] = []


class _Wait:
    """Replay: hold what follows until the client answers the server's request ``id``."""

    __slots__ = ("id",)

    def __init__(self, request_id: Any) -> None:
        self.id = request_id


def listed_tools(session: Session, shown: str) -> set[str]:
    """The tool names the cassette's recorded ``tools/list`` answers of the server ``shown`` list."""
    listed: set[str] = set()
    cassette = session.cassette
    for i in range(len(cassette)):
        entry = cassette.entry(i)
        if entry.provider != wire.NAME or entry.request.path != shown or entry.request.method != "tools/list":
            continue
        answer = entry.response.body if isinstance(entry.response.body, dict) else {}
        result = answer.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        listed.update(str(t.get("name")) for t in tools or [] if isinstance(t, dict))
    return listed


def _live_listed(session: Session, shown: str) -> list[str]:
    """The tools ``tool_policy`` marks ``live`` that the server's recording lists."""
    live = [name for name, policy in session.options.tool_policy if policy == "live"]
    if not live:
        return []
    listed = listed_tools(session, shown)
    return [name for name in live if name in listed]


def recorded_for(session: Session, server: str) -> int:
    """How many entries of ``session``'s cassette, as it was read, are this server's. What this session
    recorded is left out: a second connection to a server being recorded (an adapter that connects
    once per tool call) is recorded too, never answered from the first."""
    path = session.redactor.text(server)
    cassette = session.cassette
    count = 0
    for i in range(len(cassette) - session.recorded):
        entry = cassette.entry(i)
        if entry.provider == wire.NAME and entry.request.path == path:
            count += 1
    return count


class Exchange:
    """The traffic of one connection to one MCP server, while a cassette is open."""

    def __init__(self, session: Session, server: str, *, replaying: bool) -> None:
        self.session, self.server, self.replaying = session, server, replaying
        self.shown = session.redactor.text(server)  # as errors and the cassette name it
        self._turns: dict[Any, _Turn] = {}  # live: requests in flight, by the client's id
        self._idle: list[JSON] = []  # live: messages while nothing was in flight
        self._idle_since = time.perf_counter()
        self._queue: deque[JSON | _Wait] = deque()  # replay: what the client is to receive
        self._answered: set[Any] = set()  # replay: server requests the client answered

    @classmethod
    def open(cls, session: Session, server: str) -> Exchange:
        """The exchange for a connection opening now; raises before anything starts when the
        cassette can neither replay nor record this server."""
        __tracebackhide__ = True
        held = recorded_for(session, server) if session.record_mode != "all" else 0
        if held:  # a ``live`` tool needs its server: the connection opens live, its requests matched
            return cls(session, server, replaying=not _live_listed(session, session.redactor.text(server)))
        if session.can_record or session.options.on_divergence == "live":
            return cls(session, server, replaying=False)
        shown = session.redactor.text(server)
        raise NothingRecordedError(
            f"llmvcr: {session.path} holds no MCP traffic for the server {shown} (record_mode="
            f"{session.record_mode!r}); nothing was started. Record it with record_mode='new_episodes' "
            f"(or --llmvcr-record-mode=new_episodes), or check the server's command and arguments match "
            f"the recording's",
            cassette_path=session.path,
        )

    # -- the client's messages -----------------------------------------------------------------
    def from_client(self, message: Any) -> list[JSON]:
        """A message the client sends; replay returns the messages it is to receive now. Live, it
        returns nothing when the message goes on to the server, else the answers the client gets
        instead (a ``tools/call`` that ``tool_policy`` denies): the message is then not sent."""
        kind = wire.kind(message)
        if self.replaying:
            return self._replay(kind, message)
        return self._observe_client(kind, message)

    def _tool_policy(self, message: JSON) -> tuple[str, str]:
        """The tool a ``tools/call`` names and its policy (``replay`` for any other request);
        raises ``ToolDeniedError`` for a denied tool."""
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if message.get("method") != "tools/call" or not isinstance(name, str):
            return "", "replay"
        return name, check_tool_policy(self.session, name, f" of the MCP server {self.shown}")

    def _replay(self, kind: str, message: JSON) -> list[JSON]:
        if kind in ("result", "error"):  # the client answers a server request we replayed
            self._answered.add(message.get("id"))
            return self._ready()
        if kind != "request":  # a client notification: nothing answers it
            return self._ready()
        try:
            tool, policy = self._tool_policy(message)
        except ToolDeniedError as err:
            return [wire.error_answer(message["id"], str(err))]
        if policy == "live":
            text = (
                f"llmvcr: {self.session.path}: the tool {tool!r} has tool_policy 'live', but the MCP server "
                f"{self.shown} is replayed from the cassette and was not started: a connection opens live "
                f"for a 'live' tool only when the server's recorded tools/list lists it, and it does not. "
                f"Re-record with record_mode='all' and a list_tools() call, or set its policy to 'replay'"
            )
            return [wire.error_answer(message["id"], text)]
        request = wire.request_of(self.server, message)
        try:
            decision = self.session.decide(PROVIDER, request)
        except ReplayDivergence as err:
            return [wire.error_answer(message["id"], self._tools_changed(request) + str(err))]
        if decision.fault is not None:
            return [wire.error_answer(message["id"], decision.fault.message)]
        if decision.entry is None:
            text = (
                f"llmvcr: {self.session.path}: the MCP server {self.shown} is replayed from the cassette "
                f"(it was not started), and the cassette holds no answer to {request.method}; a replayed "
                f"connection cannot go live half-way. Re-record it with record_mode='all'"
            )
            return [wire.error_answer(message["id"], text)]
        for event in decision.entry.response.stream or ():
            data = event.get("data")
            if event.get("event") == wire.CLIENT:
                if isinstance(data, dict) and wire.kind(data) in ("result", "error"):
                    self._queue.append(_Wait(data.get("id")))
            elif isinstance(data, dict):
                self._queue.append(data)
        self._queue.append(wire.answer_of(decision.entry.response, message["id"]))
        return self._ready()

    def _tools_changed(self, request: Request) -> str:
        """When a tool is called that the recorded ``tools/list`` did not list, that comes first."""
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "tools/call" or not isinstance(body.get("name"), str):
            return ""
        listed = listed_tools(self.session, self.shown)
        if not listed or body["name"] in listed:
            return ""
        return (
            f"llmvcr: the tools of the MCP server {self.shown} changed since recording: {body['name']!r} "
            f"is not among its recorded tools ({', '.join(sorted(str(n) for n in listed))}); re-record "
            f"with record_mode='all'.\n"
        )

    def _ready(self) -> list[JSON]:
        out: list[JSON] = []
        while self._queue:
            head = self._queue[0]
            if isinstance(head, _Wait):
                if head.id not in self._answered:
                    break
                self._queue.popleft()
                continue
            out.append(head)
            self._queue.popleft()
        return out

    def _observe_client(self, kind: str, message: JSON) -> list[JSON]:
        if kind == "request":
            try:
                _, policy = self._tool_policy(message)
            except ToolDeniedError as err:  # not sent to the server, not recorded
                return [wire.error_answer(message["id"], str(err))]
            decision: Decision | None = None
            if policy != "live":  # a live tool's calls are neither matched nor recorded
                request = wire.request_of(self.server, message)
                try:
                    decision = self.session.decide(PROVIDER, request)
                except ReplayDivergence as err:  # a replay-only cassette, live for a 'live' tool
                    return [wire.error_answer(message["id"], self._tools_changed(request) + str(err))]
            now = time.perf_counter()
            turn = _Turn(decision if decision is not None and decision.recording else None, now)
            for event in self._idle:
                event["t"] = round((event.pop("at") - now) * 1000, 1)
                turn.events.append(event)
            self._idle = []
            self._turns[message.get("id")] = turn
            return []
        self._note(wire.CLIENT, message)
        return []

    # -- the live server's messages ------------------------------------------------------------
    def from_server(self, message: Any) -> None:
        """A message the live server sent (recording)."""
        if self.replaying:
            return
        kind = wire.kind(message)
        if kind in ("result", "error"):
            turn = self._turns.pop(message.get("id"), None)
            if turn is not None:
                if turn.decision is not None:
                    turn.decision.record(wire.response_of(message, turn.events))
                return
        self._note(wire.SERVER, message)

    def _note(self, side: str, message: Any) -> None:
        now = time.perf_counter()
        if self._turns:  # on the latest request in flight
            turn = list(self._turns.values())[-1]
            turn.events.append({"event": side, "data": message, "t": round((now - turn.start) * 1000, 1)})
        else:
            self._idle.append({"event": side, "data": message, "at": now})

    def close(self) -> None:
        """The connection ends: a live request never answered, or a server message after the last
        request, is said, never dropped silently."""
        if self.replaying:
            return
        late = [e for e in self._idle if e.get("event") == wire.SERVER]
        self._idle = []
        if late:
            warnings.warn(
                f"llmvcr: {self.session.path}: the MCP server {self.shown} sent {len(late)} message(s) after "
                f"the last request of its connection; no request holds them, so they were not recorded",
                stacklevel=2,
            )
        if not self._turns:
            return
        pending = [t for t in self._turns.values() if t.decision is not None]
        self._turns.clear()
        if pending:
            methods = ", ".join(t.decision.request.method for t in pending if t.decision is not None)
            warnings.warn(
                f"llmvcr: {self.session.path}: the MCP connection to {self.shown} closed with requests "
                f"unanswered ({methods}); they were not recorded",
                stacklevel=2,
            )
