"""The guard in front of rapidyaml: which YAML text the fast path may read.

rapidyaml reads YAML 1.2 and writes its tree as JSON; PyYAML's safe loader reads YAML 1.1 and is the
reference of every path. ``risky(data)`` says whether the two may read a document differently, or
PyYAML refuse what rapidyaml accepts; ``parse_cache.parse_yaml`` then reads it with PyYAML.
"""

from __future__ import annotations

import functools
import re

__all__ = ["risky"]


# Text on which rapidyaml and YAML 1.1 (PyYAML) may read differently sends a document to PyYAML:
# where a node starts, a plain scalar one reads as a bool, null, number or date and the other as
# text (rapidyaml's JSON types only lowercase true/false/null and JSON numbers; a key stays text),
# a tag, an anchor, an alias, a reserved indicator, a merge or value key, or a flow collection
# other than the ones llmvcr writes; anywhere, a second document, a tab, a lone CR, a BOM or a
# line break only YAML 1.1 has (NEL, LS, PS), all of which llmvcr's writer escapes. A match inside
# quoted or block text only costs the fast path, never correctness. Each pattern starts with a
# literal, so a search skips at C speed (a leading class or lookbehind made sre try every
# position: 0.6 ms on a 12 KB cassette, more than a compiled parser's whole parse).
_ONLY_1_1 = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xef\xbb\xbf")
_INT = rb"-?(?:0|[1-9][0-9]{0,17})(?![0-9])"  # fits 64 bits: orjson reads a longer one as a float
_FLOAT = rb"-?(?:0|[1-9][0-9]{0,199})\.[0-9]+(?:[eE][-+][0-9]{1,2})?"  # finite: 1e999 is inf only in PyYAML
_END = rb"(?= *(?:#|:(?: |\n|\Z)|\n|\Z))"  # the scalar ends: a comment, a key's colon, the line


@functools.cache
def _guards() -> tuple[re.Pattern[bytes], ...]:
    """The patterns above, compiled on the first YAML parse rather than at import."""
    safe = rb"(?:" + _INT + rb"|" + _FLOAT + rb"|[0-9]+(?:\.[0-9]+){2,})" + _END  # 0.1.0: text in both
    unsigned = rb"(?:" + _INT[2:] + rb"|" + _FLOAT[2:] + rb")" + _END  # after a minus sign
    number = rb"(?:" + _INT + rb"|" + _FLOAT + rb"|null)"
    # the flow collections llmvcr writes: [], {}, a stream's timing, {same_as: N}; each from its bracket
    timing = rb"(?:[ \n]*(?:" + number + rb"[ \n]*,[ \n]*)*" + number + rb"[ \n]*| *)\] *(?:\n|\Z)"
    same_as = rb"(?: *same_as *: +(?:0|[1-9][0-9]*) *| *)\} *(?:\n|\Z)"
    # Grouped by first character, each group behind a one-character test, each alternative starting
    # with a literal or a class: sre tries the alternatives of a group one by one, and most nodes (a
    # lowercase word, a quote, a small int) are turned away by the first test of each group.
    end = _END
    colon = rb" *:(?: |\n|\Z)"  # a key's colon, spaces before it or not (``0 : x``)
    words = (  # bools and nulls only YAML 1.1 reads (rapidyaml's JSON types only lowercase true/false/null)
        rb"[yY]es|YES|[nN]o|NO|[oO](?:n|ff)|O(?:N|FF)|T(?:rue|RUE)|F(?:alse|ALSE)|N(?:ull|ULL)|~"
        rb"|nan|inf(?:inity)?"  # the words rapidyaml's JSON writes as .nan/.inf (a quoted key too: _special)
        rb"|[*@`][^\s*`]*"  # an alias or a reserved indicator: PyYAML refuses it, rapidyaml reads text
        rb"|[?:]"  # (markdown's *emphasis* and `code` in text end otherwise, so they keep the fast path)
    )
    keys = rb"(?:true|false|null)" + colon  # true/false/null as a key: rapidyaml keeps every key as text
    marks = (
        rb"<<"  # a merge key
        rb"|=(?![^ \n:])"  # a value key
        rb"|[?:](?: |\n|\Z)"  # an explicit key (``? 0``) or an empty one (``: 0``), which PyYAML refuses
    )
    numbers = (
        # a sign or a dot: nothing both read alike as a value but -12 and -1.5 (1e5 0o17 1_0 1:2 .inf)
        rb"\+[-+.0-9_:a-zA-Z]*"
        + end
        + rb"|\.[0-9a-zA-Z][0-9a-zA-Z_.:eE+-]*"
        + end
        + rb"|-(?:nan|inf(?:inity)?|0[xXoObB]|\.)"
        + rb"|-(?!"
        + unsigned
        + rb")[0-9][0-9_.:eE+-]*"
        + end
        + rb"|-[0-9][0-9.eE+-]*"
        + colon
        # a digit: a number only YAML 1.1 reads (1e5 017 1_0 1:20 0x1F), any number as a key, a date
        + rb"|(?!"
        + safe
        + rb")(?:0[xXoObB][0-9a-fA-F_]*|[0-9][0-9_.:eE+-]*)"
        + end
        + rb"|[0-9][0-9.eE+-]*"
        + colon
        + rb"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]| +[0-9])"  # a YAML 1.1 timestamp
    )
    scalar = (  # a whole plain scalar the two versions may read differently
        rb"(?=[yYnNoOTFi~*@`?:])(?:"
        + words
        + rb")"
        + end
        + rb"|(?=[tfn])"
        + keys
        + rb"|(?=[<=?:])(?:"
        + marks
        + rb")"
        # an int on its own line (most numbers in a cassette) is turned away first
        + rb"|(?=[-+.0-9])(?!(?:0|[1-9][0-9]{0,17})\n)(?:"
        + numbers
        + rb")"
    )
    start = rb"(?=[-+.0-9yYnNoOTFtfi~*@`?:<=!&\[{])"  # what a risky node starts with
    # group 1 (2 in the line pattern): a tag, an anchor or a flow collection, which _risky checks
    # against the flow collections llmvcr writes (a lookahead over them here made every search slow)
    node = start + rb"(?:([!&\[{])|" + scalar + rb")"
    return (
        re.compile(rb": +" + node),  # a value
        re.compile(rb"- +" + node),  # a list item (and --- 1e5)
        re.compile(rb"\? +" + node),  # an explicit key
        # a key, a value on its own line, or text; (?=( *))\1 keeps sre from backtracking the indent
        re.compile(rb"\n(?=( *))\1" + start + rb"(?:([!&\[{])|" + scalar + rb")"),
        re.compile(rb"\[" + timing + rb"|\{" + same_as),
        re.compile(rb"[\]}] *:(?: |\Z)"),  # a flow collection as a key
    )


# rapidyaml's JSON writes the text nan, inf or infinity (with a sign) as .nan or .inf, even where
# it is a quoted key; a cheap `in` test comes first, the search only where one of them occurs
@functools.cache
def _special_words() -> tuple[re.Pattern[bytes], ...]:
    end = rb"['\"]? *(?:#|:|\n|\Z)"  # each pattern starts with a literal: sre skips to it at C speed
    return re.compile(rb"nan" + end), re.compile(rb"inf(?:inity)?" + end)


def _special(text: bytes) -> bool:
    for m in (m for pattern in _special_words() for m in pattern.finditer(text)):
        at = m.start()
        if text[at - 1 : at] == b"-":
            at -= 1
        if text[at - 1 : at] in (b" ", b"\n", b"'", b'"', b"[", b"{", b","):
            return True
    return False


def risky(data: bytes) -> bool:
    """Whether rapidyaml and PyYAML may read ``data`` differently (or PyYAML refuse it): then
    ``parse_yaml`` reads it with PyYAML."""
    if b"\r" in data:  # a Windows checkout's CRLF reads as LF in both; a lone CR is a break only in 1.1
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            return True
    if b"\t" in data or (not data.isascii() and any(c in data for c in _ONLY_1_1)):
        return True
    value, item, key, line, written, flow_key = _guards()
    text = b"\n" + data  # the first line starts after a newline too
    if b"\n---" in text:  # a document marker: rapidyaml reads the stream, PyYAML one document
        return True
    for pattern in (value, item, key) if b"? " in text else (value, item):
        for m in pattern.finditer(text):
            at = m.start(1)
            if at < 0 or not written.match(text, at):  # a risky scalar, or a flow llmvcr never writes
                return True
    if (b"nan" in text or b"inf" in text) and _special(text):
        return True
    for m in line.finditer(text):
        at = m.start(2)
        if at < 0 or (_holds_a_node(text, at, flow_key) and not written.match(text, at)):
            return True
    return False


def _holds_a_node(text: bytes, at: int, flow_key: re.Pattern[bytes]) -> bool:
    """Whether the line whose first character is ``text[at]`` starts a node: it holds a key
    (``&anchor key: 1``, ``[a]: 1``) or follows one, not text wrapped onto it or in a block scalar."""
    end = text.find(b"\n", at)
    end = len(text) if end == -1 else end
    if text[at] in b"[{":  # a flow key ends with its bracket; a JSON line in a block scalar does not
        if flow_key.search(text, at, end):
            return True
    elif text.find(b": ", at, end) != -1 or text.endswith(b":", at, end):  # a tag's or anchor's key
        return True
    k = text.rfind(b"\n", 0, at)
    while k > 0:  # the line before, blank and comment lines skipped
        start = text.rfind(b"\n", 0, k) + 1
        previous = text[start:k].strip(b" ")
        if previous and not previous.startswith(b"#"):
            return previous.endswith((b":", b"-", b"?")) or b" #" in previous
        k = start - 1
    return True  # the document's first node
