"""Sans-I/O framing the links share: the inbound cap, and the pipe's NUL framing.

Nothing here does I/O or imports trio. The websocket codec (``engine._ws_codec``) and :class:`NulFramer`
both stop at ``max_inbound_bytes`` (``Settings.max_inbound_bytes``) with :class:`InboundTooLarge`: a peer
that never ends its message (no NUL, a frame header declaring gigabytes) must close the link instead of
growing our memory. The transports turn it into a ConnectionClosed that says what came and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine._settings import DEFAULT_SETTINGS

_json_loads: Callable[[bytes | bytearray], Any]
try:
    from orjson import loads as _json_loads
except ImportError:  # a platform without its wheel
    from json import loads as _json_loads

MAX_INBOUND_BYTES = DEFAULT_SETTINGS.max_inbound_bytes
"""The default inbound cap (``Settings.max_inbound_bytes``): a transport built without settings is bounded."""


EARLY_OBJECT_MAX = 64 * 1024
"""The longest unfinished message :class:`NulFramer` parses to see whether it is whole already: a reply
that large waits for its NUL, and a large message arriving in pieces is not parsed again at every piece."""
_CLOSING_BRACE = ord("}")


class InboundTooLarge(Exception):
    """A framer met a message over its inbound limit (the peer's doing; the transport closes the link).

    Args:
        size: the message's length, or what arrived of it so far when ``at_least``.
        limit: the inbound limit it is over.
        at_least: the message is not finished, so ``size`` is a lower bound.
        completed: what the same call completed before it (messages or events). They are whole and may
            answer waiting commands, so the transport delivers them before it reports the closed link.
    """

    def __init__(
        self, size: int, limit: int, *, at_least: bool = False, completed: Sequence[Any] = ()
    ) -> None:
        self.size = size
        self.limit = limit
        self.at_least = at_least
        self.completed = completed
        super().__init__(f"a message of {'at least ' if at_least else ''}{size:,} bytes")

    def explain(self, link: str) -> str:
        """The ConnectionClosed text: what came, the limit and its setting, what happened, what to do."""
        return (
            f"the browser sent {self}, over the {self.limit:,}-byte limit (Settings.max_inbound_bytes); "
            f"the {link} was closed. Raise the limit if the message is legitimate"
        )


class NulFramer:
    """Splits a byte stream into NUL-terminated messages (the pipe's framing).

    Each byte is searched once: only the newly fed chunk is scanned, and the unfinished message is kept in
    a bytearray that grows in place, so a message of hundreds of megabytes costs linear time. The limit is
    a length comparison per chunk: a chunk no longer than the limit cannot hold a message over it, so only
    the unfinished message (and, with a limit below the read size, a long chunk) is measured.

    With ``json_objects`` (the pipe's CDP messages, each one JSON object), an unfinished message that
    already parses as a whole object is returned without waiting for its NUL, and that NUL is skipped when
    it comes. Chromium writes the NUL with a write of its own; when the first write wakes the reader on the
    same core, the NUL follows only once the reader sleeps again (measured over the pipe: in up to 16% of
    the engine's getVersion round trips and up to half of a plainer client's, 23-43 us later). No proper
    prefix of an object's JSON is a whole object, so the check cannot cut a message short; it runs only on
    a small unfinished message that ends in ``}``.

    Args:
        max_inbound_bytes: the longest message; a longer one, finished or not, raises InboundTooLarge.
        json_objects: return a whole JSON object before its NUL comes (see above).
    """

    def __init__(self, *, max_inbound_bytes: int = MAX_INBOUND_BYTES, json_objects: bool = False) -> None:
        self._partial = bytearray()
        self._limit = max_inbound_bytes
        self._json_objects = json_objects
        self._nul_owed = False

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished message held back."""
        return len(self._partial)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the messages they complete (empty messages are skipped).

        Raises:
            InboundTooLarge: a message is over ``max_inbound_bytes``; nothing more should be fed.
        """
        messages: list[bytes] = []
        limit = self._limit
        if self._nul_owed:
            self._nul_owed = False
            if data[:1] == b"\0":  # the NUL of a message already returned
                data = data[1:]
        if self._partial:
            end = data.find(b"\0")
            held = len(self._partial)
            if end == -1:
                if held + len(data) > limit:
                    raise InboundTooLarge(held + len(data), limit, at_least=True)
                self._partial += data
                if self._json_objects:
                    self._take_whole_object(messages)
                return messages
            if held + end > limit:
                raise InboundTooLarge(held + end, limit)  # nothing before it in this chunk
            with memoryview(data) as view:
                self._partial += view[:end]
            messages.append(bytes(self._partial))
            self._partial = bytearray()
            data = data[end + 1 :]
        parts = data.split(b"\0")
        tail = parts.pop()
        if len(data) > limit:
            for part in parts:
                if len(part) > limit:
                    raise InboundTooLarge(len(part), limit, completed=messages)
                if part:
                    messages.append(part)
            if len(tail) > limit:
                raise InboundTooLarge(len(tail), limit, at_least=True, completed=messages)
        elif len(parts) == 1 and parts[0]:
            messages.append(parts[0])  # the usual read: one whole message (a generator costs two frames)
        else:
            messages.extend(part for part in parts if part)
        if tail:
            self._partial += tail
            if self._json_objects:
                self._take_whole_object(messages)
        return messages

    def _take_whole_object(self, messages: list[bytes]) -> None:
        """Move the unfinished message to ``messages`` if it is already a whole JSON object."""
        partial = self._partial
        if partial[-1] != _CLOSING_BRACE or len(partial) > EARLY_OBJECT_MAX:
            return
        try:
            whole = type(_json_loads(partial)) is dict
        except (ValueError, RecursionError):  # not whole yet (json.loads, without orjson, may recurse)
            return
        if whole:
            messages.append(bytes(partial))
            self._partial = bytearray()
            self._nul_owed = True


def nul_framed(messages: Sequence[bytes]) -> bytes:
    """Whole messages as one buffer for one write, each followed by its NUL byte."""
    if len(messages) == 1:
        return messages[0] + b"\0"
    parts: list[bytes] = []
    for message in messages:
        parts.append(message)
        parts.append(b"\0")
    return b"".join(parts)
