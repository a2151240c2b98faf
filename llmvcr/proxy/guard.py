"""What a request must show before the proxy acts on it: the ``Host`` it was sent to, the page it
came from, a JSON control body, and the token.

A server on loopback is still reachable from every web page the user opens. A page can send a
``text/plain`` or form POST to any port with no preflight (cross-site request forgery), and a page
on a name the attacker controls can rebind that name to 127.0.0.1 and then read the answers as
same-origin (DNS rebinding). So, as the Jupyter and Vite dev servers learned to:

- ``Host`` must be a loopback name, the address bound or the connection came in on, or one given with
  ``--allow-host`` (a rebound name is none of these);
- a request carrying an ``Origin`` (a browser's) must come from the proxy's own origin, and one a
  browser marks ``Sec-Fetch-Site: cross-site``/``same-site`` is refused: SDKs send neither;
- a control request with a body must say ``content-type: application/json``, which a page cannot
  send to another origin without a preflight the proxy never answers;
- with a token, the control API needs it, and off loopback every provider call does too, as the
  header ``x-llmvcr-token`` or the base-URL segment ``/token/<TOKEN>`` (for SDKs that take only a
  base URL). The token is never forwarded upstream and never written.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

TOKEN_HEADER = "x-llmvcr-token"
TOKEN_PREFIX = "/token/"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SAME = frozenset({"same-origin", "none"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or a ``localhost`` name."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """``Host: 127.0.0.1:8765`` -> ``127.0.0.1``; ``[::1]:8765`` -> ``::1``; lowercase."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def split_token(raw_path: str) -> tuple[str | None, str]:
    """``/token/T/cassettes/x/v1`` -> ``("T", "/cassettes/x/v1")``; a path without it: ``(None, path)``."""
    if not raw_path.startswith(TOKEN_PREFIX):
        return None, raw_path
    token, sep, rest = raw_path[len(TOKEN_PREFIX) :].partition("/")
    return unquote(token), "/" + rest if sep else "/"


class Guard:
    """The checks of one proxy: its token, and the extra ``Host`` names it answers (``*``: any)."""

    def __init__(self, token: str | None, *, allow_hosts: Iterable[str] = (), calls_need_token: bool = False):
        if token is not None and not token.strip():
            raise ValueError("llmvcr serve: the token is empty; give a non-empty one, or none at all")
        self.token = token
        self.any_host = "*" in allow_hosts
        self.hosts = LOOPBACK_NAMES | {host_name(h) for h in allow_hosts if h != "*"}
        self.calls_need_token = calls_need_token and token is not None

    def refusal(self, headers: Mapping[str, str], server: tuple[str, int] | None) -> str | None:
        """Why a request is refused before anything else is read (None: it is not)."""
        own = (host_name(server[0]), server[1]) if server else None
        host = host_name(headers.get("host", ""))
        if not self._host_ok(host, own):
            return (
                f"llmvcr serve: refused a request for Host {headers.get('host', '')!r}: the proxy answers "
                f"only loopback names and the address it is bound to (a web page rebinding a name of its "
                f"own to this address would send that name); start it with --allow-host NAME to accept it"
            )
        origin = headers.get("origin")
        if origin is not None and not self._own_origin(origin, own):
            return (
                f"llmvcr serve: refused a request from the web page at {origin!r}: a browser page may not "
                f"use the proxy (SDKs send no Origin)"
            )
        if headers.get("sec-fetch-site", "none") not in _SAME:
            return "llmvcr serve: refused a request a browser sent from another site (Sec-Fetch-Site)"
        return None

    def _host_ok(self, host: str, own: tuple[str, int] | None) -> bool:
        return (
            self.any_host or host in self.hosts or is_loopback(host) or (own is not None and host == own[0])
        )

    def _own_origin(self, origin: str, own: tuple[str, int] | None) -> bool:
        try:
            parts = urlsplit(origin)
            port = parts.port or 80
        except ValueError:
            return False
        host = (parts.hostname or "").lower()
        return parts.scheme == "http" and own is not None and port == own[1] and self._host_ok(host, own)

    def control_ok(self, headers: Mapping[str, str]) -> bool:
        """The control API's token: ``x-llmvcr-token``, ``authorization: Bearer`` or the path's."""
        if self.token is None:
            return True
        given = headers.get(TOKEN_HEADER) or headers.get("authorization", "").removeprefix("Bearer ")
        return self._same(given)

    def call_ok(self, headers: Mapping[str, str], from_path: str | None, *, options: bool) -> bool:
        """A provider call's token (only ``x-llmvcr-token`` or the path: ``authorization`` is the
        caller's key): needed off loopback, and for cassette options sent in headers."""
        if self.token is None or not (self.calls_need_token or options):
            return True
        return self._same(from_path if from_path is not None else headers.get(TOKEN_HEADER, ""))

    def _same(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())

    def forwarded(self, name: bytes, value: bytes) -> bool:
        """Whether a request header may go upstream: never one carrying the token."""
        if self.token is None:
            return True
        if name.lower() == b"authorization":
            return not hmac.compare_digest(value.removeprefix(b"Bearer ").strip(), self.token.encode())
        return True


def is_json(headers: Mapping[str, str]) -> bool:
    """The request says its body is JSON (``application/json``, any parameters)."""
    return headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
