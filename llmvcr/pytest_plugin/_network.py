"""The network guard: refuse LLM calls that would leave the machine unrecorded.

On CI (and under ``--llmvcr-block-network``) an LLM SDK call made outside every cassette raises
``NetworkBlockedError`` at once, naming the test: those calls cost money and need keys. That holds
for loopback too (a gateway there forwards to a paid API); ``--llmvcr-allowed-hosts`` lets a host
through by name, a local model server say. A call
another recorder answers (a test marked ``vcr`` for pytest-recording or cassetter, or vcrpy's
transport patch in place) is left to it. Only ``--llmvcr-block-network`` also refuses socket
connections to hosts that are not loopback or allowed, unless a cassette that may record is open;
databases and service containers a suite talks to are not llmvcr's business otherwise.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

from .. import _active, providers
from ..errors import NetworkBlockedError

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class Guard:
    """Refuses connections and LLM calls made outside a cassette that may record."""

    def __init__(self, allowed: set[str], *, block_sockets: bool = False) -> None:
        self.allowed = {h.lower() for h in allowed}
        self.block_sockets = block_sockets
        self.test = "(no test)"
        self.other_recorder = False  # the current test is another recorder's (marked "vcr")
        self._resolved: set[str] = set()  # addresses an allowed name resolved to
        self._original: Any = None
        self._original_getaddrinfo: Any = None
        self._transports: dict[str, Any] = {}

    def allows_llm_host(self, host: str) -> bool:
        """An LLM call outside a cassette goes only to a host allowed by name: loopback too, since a
        gateway there (LiteLLM and the like) forwards to a paid API; a local model server is allowed
        with ``--llmvcr-allowed-hosts=localhost,127.0.0.1``."""
        return host.strip("[]").lower() in self.allowed

    def allows_host(self, host: str) -> bool:
        host = host.strip("[]").lower()
        if host in self.allowed or host in _LOOPBACK_NAMES or host in self._resolved:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def recording_here(self) -> bool:
        session = _active.current_session()
        return session is not None and (session.can_record or session.options.on_divergence == "live")

    def refuse(self, what: str) -> NetworkBlockedError:
        """A connection to a host that is not loopback or allowed (``--llmvcr-block-network`` only)."""
        return NetworkBlockedError(
            f"{self.test}: {what} blocked by --llmvcr-block-network. Replay it from a cassette "
            f"(@pytest.mark.llmvcr), record it locally with --llmvcr-record-mode=once inside one, or "
            f"allow the host with --llmvcr-allowed-hosts"
        )

    def refuse_call(self, what: str) -> NetworkBlockedError:
        """An LLM call outside every cassette: recording it needs a cassette first, then a local run."""
        why = "--llmvcr-block-network refuses" if self.block_sockets else "when CI is set, llmvcr refuses"
        return NetworkBlockedError(
            f"{self.test}: {what}: {why} LLM calls outside a cassette (they cost money and need a key). "
            f"Put the call in a cassette: mark the test @pytest.mark.llmvcr (or wrap the call in "
            f"llmvcr.use_cassette(...)), then record it on your machine and commit the cassette: "
            f"pytest '{self.test}' --llmvcr-record-mode=once. To let it go out unrecorded instead (a local "
            f"model server), allow its host with --llmvcr-allowed-hosts"
        )

    def outside_call(self, provider: str, call: str, host: str | None) -> NetworkBlockedError | None:
        """The outside policy: an LLM call no cassette answers is refused unless its host is allowed
        or another recorder answers it."""
        if (
            (host is not None and self.allows_llm_host(host))
            or self.other_recorder
            or self._answered_elsewhere()
        ):
            return None
        where = f" to {host}" if host else ""
        return self.refuse_call(f"the {provider} call {call}{where} outside a cassette")

    def _answered_elsewhere(self) -> bool:
        current = _transport_handles()
        for name in current.keys() - self._transports.keys():  # imported since start
            self._transports[name] = current[name]
        return any(current[name] is not self._transports[name] for name in current)

    def start(self) -> None:
        self._transports = _transport_handles()
        _active.set_outside_policy(self.outside_call)
        providers.install()  # the seams watch calls made outside any cassette too
        if self.block_sockets:
            self._block_sockets()

    def _block_sockets(self) -> None:
        guard = self
        original_getaddrinfo = socket.getaddrinfo
        self._original_getaddrinfo = original_getaddrinfo

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            infos = original_getaddrinfo(host, *args, **kwargs)
            if isinstance(host, str) and host.lower() in guard.allowed:  # allowed by name, before resolution
                guard._resolved.update(str(info[4][0]) for info in infos)
            return infos

        socket.getaddrinfo = getaddrinfo
        original = socket.socket.connect
        self._original = original

        def connect(sock: socket.socket, address: Any) -> Any:
            host = address[0] if isinstance(address, tuple) else str(address)
            if (
                sock.family == getattr(socket, "AF_UNIX", None)
                or guard.allows_host(str(host))
                or guard.recording_here()
            ):
                return original(sock, address)
            raise guard.refuse(f"a connection to {address!r}")

        socket.socket.connect = connect  # type: ignore[method-assign, assignment]

    def watch_sdks(self) -> None:
        """Wrap the funnels of SDKs imported since the last test, so a blocked call surfaces at once."""
        for provider in providers.registered():
            provider.install()

    def stop(self) -> None:
        if self._original is not None:
            socket.socket.connect = self._original  # type: ignore[method-assign]
            socket.getaddrinfo = self._original_getaddrinfo
        _active.set_outside_policy(None)
        providers.uninstall()


def _transport_handles() -> dict[str, Any]:
    """The HTTP libraries' own ``HTTPTransport.handle_request``, to tell when another recorder replaced it."""
    handles: dict[str, Any] = {}
    for name in ("httpx2", "httpx"):
        transport = getattr(sys.modules.get(name), "HTTPTransport", None)
        if transport is not None:
            handles[name] = vars(transport).get("handle_request")
    return handles
