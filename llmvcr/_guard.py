"""The network guard: refuse LLM calls and connections that would leave the machine unrecorded.

On under ``--llmvcr-block-network`` (and on CI by default). An LLM SDK call made outside every
cassette raises ``NetworkBlockedError`` at once, naming the test; so does a socket connection
to a host that is not loopback or allowed, unless a cassette that may record is open.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from . import _active, providers
from .errors import NetworkBlockedError

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class Guard:
    """Refuses connections and LLM calls made outside a cassette that may record."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.test = "(no test)"
        self._original: Any = None

    def allows_host(self, host: str) -> bool:
        if host in self.allowed or host in _LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(host.strip("[]")).is_loopback
        except ValueError:
            return False

    def recording_here(self) -> bool:
        session = _active.current_session()
        return session is not None and (session.can_record or session.options.on_divergence == "live")

    def refuse(self, what: str) -> NetworkBlockedError:
        return NetworkBlockedError(
            f"{self.test}: {what} blocked by --llmvcr-block-network (on when CI is set). "
            f"Replay it from a cassette (@pytest.mark.llmvcr), record it locally with "
            f"--llmvcr-record-mode=once, or allow the host with --llmvcr-allowed-hosts"
        )

    def outside_call(self, provider: str, call: str, host: str | None) -> NetworkBlockedError | None:
        """The outside policy: an LLM call no cassette answers is refused unless its host is allowed."""
        if host is not None and self.allows_host(host):
            return None
        where = f" to {host}" if host else ""
        return self.refuse(f"the {provider} call {call}{where} outside a cassette")

    def start(self) -> None:
        guard = self
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
        _active.set_outside_policy(self.outside_call)
        providers.install()  # the seams watch calls made outside any cassette too

    def watch_sdks(self) -> None:
        """Wrap the funnels of SDKs imported since the last test, so a blocked call surfaces at once."""
        for provider in providers.registered():
            provider.install()

    def stop(self) -> None:
        if self._original is not None:
            socket.socket.connect = self._original  # type: ignore[method-assign]
        _active.set_outside_policy(None)
        providers.uninstall()
