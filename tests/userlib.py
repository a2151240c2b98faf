"""A stand-in for a user's own non-HTTP SDK, for the generic function recorder's tests."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from collections.abc import AsyncIterator, Iterator

import pydantic

CALLS: list[str] = []


class Reply(pydantic.BaseModel):
    text: str
    tokens: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Gateway:
    def complete(self, prompt: str) -> Reply:
        CALLS.append(prompt)
        return Reply(text=f"reply to {prompt} #{len(CALLS)}", tokens=len(prompt))

    async def acomplete(self, prompt: str) -> Point:
        CALLS.append(prompt)
        await asyncio.sleep(0)
        return Point(len(prompt), len(CALLS))

    def words(self, prompt: str) -> Iterator[str]:
        CALLS.append(prompt)
        yield from prompt.split()

    def sign_in(self, user: str, api_key: str) -> dict[str, str]:
        """Echoes the key as a gateway might: raw and base64-encoded."""
        CALLS.append(user)
        return {"user": user, "key": api_key, "token": base64.b64encode(api_key.encode()).decode()}

    def new_key(self) -> dict[str, str]:
        """A key minted by the call: its base64 form first, then the key itself."""
        key = "sk-ant-api03-" + "Q7w8E9r0T1y2U3i4O5p6" * 4
        return {"encoded": base64.b64encode(key.encode()).decode(), "key": key}

    def broken(self, prompt: str) -> str:
        CALLS.append(prompt)
        raise ValueError(f"bad prompt {prompt!r}")


async def stream_tokens(prompt: str) -> AsyncIterator[dict[str, str]]:
    CALLS.append(prompt)
    for word in prompt.split():
        await asyncio.sleep(0)
        yield {"token": word}


def complete(prompt: str, api_key: str) -> dict[str, str]:
    """A hand-written client call that echoes its key, as careless gateways do."""
    CALLS.append(prompt)
    return {"text": f"reply to {prompt}", "debug": f"called with key {api_key}"}


MINTED_KEY = "sk-ant-api03-SENTINEL-minted-0123456789"


def minted_token(encoding: str, offset: int) -> str:
    """A key the call mints, returned only base64-encoded (``b64`` or ``b64url``) inside a longer token
    whose bytes before and after it make the two encodings differ."""
    encode = base64.b64encode if encoding == "b64" else base64.urlsafe_b64encode
    return encode(b"\xfb\xef"[:offset] + MINTED_KEY.encode() + b"\xff\xfe").decode()


def minted_tokens(encoding: str, offset: int) -> Iterator[str]:
    yield "minting"
    yield minted_token(encoding, offset)


class BaseGateway:
    def m(self, prompt: str) -> str:
        CALLS.append(prompt)
        return prompt.upper()


class SubGateway(BaseGateway):
    """Inherits ``m``: patching ``SubGateway.m`` must leave no shadow behind."""
