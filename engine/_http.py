"""Connecting to a browser's DevTools endpoint over HTTP (h11): ``/json/version`` and the websocket upgrade.

:func:`fetch_json_version` reads ``/json/version``, :func:`discover_ws_url` turns it into a checked
``ws://`` URL, and :func:`open_upgraded_stream` connects and performs the upgrade
(:func:`websocket_upgrade`); ``engine._websocket``'s ``open_websocket_transport`` puts the websocket
transport on the stream it returns.

Everything that goes wrong before a link is open is a :class:`~engine._errors.ConnectError`, translated
here and only here: nothing listening, no answer within ``Settings.connect_timeout``, an answer that is not
HTTP or not a browser's, a refused or malformed upgrade. The message says what was expected and what came.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from engine._errors import ConnectError
from engine._settings import Settings
from engine._ws_codec import RemoteProtocolError, check_upgrade, handshake_key

_MAX_HTTP_BODY = 1024 * 1024

_CONNECT_FAILURES = (OSError, trio.BrokenResourceError, h11.ProtocolError, RemoteProtocolError)
"""What the socket, h11 and the handshake check raise when a connect fails; each becomes a ConnectError."""


@contextmanager
def _failures_as_connect_error(what: str) -> Iterator[None]:
    """Translate a failed connect into ConnectError(``what: the cause``), once, at this boundary."""
    try:
        yield
    except _CONNECT_FAILURES as exc:
        raise ConnectError(f"{what}: {exc}") from exc


def _split_ws_url(url: str) -> tuple[str, int, str]:
    """``(host, port, request target)`` of a ``ws://`` URL.

    Raises:
        ValueError: not a ``ws://host[:port]/...`` URL.
    """
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"expected a ws://host:port/path URL, not {url!r}")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return parts.hostname, parts.port or 80, target


def _host_header(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_NO_ANSWER = "the server closed the connection without an answer"


async def _http_exchange(
    stream: trio.abc.Stream, request: h11.Request
) -> tuple[h11.InformationalResponse | h11.Response, bytes, bytes]:
    """Send a body-less request; return the response head, its body and any bytes past it."""
    client = h11.Connection(h11.CLIENT)
    await stream.send_all(client.send(request) + client.send(h11.EndOfMessage()))
    head: h11.InformationalResponse | h11.Response | None = None
    body = bytearray()
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data and head is None:  # h11 would say it in its own terms ("can't handle event type")
                raise RemoteProtocolError(_NO_ANSWER)
            client.receive_data(bytes(data))
            continue
        if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
            return event, b"", client.trailing_data[0]
        if isinstance(event, h11.Response):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > _MAX_HTTP_BODY:
                raise RemoteProtocolError("the HTTP response body is unreasonably long")
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            if head is None:
                raise RemoteProtocolError(_NO_ANSWER)
            return head, bytes(body), b""


# -- /json/version ---------------------------------------------------------------------------------------


def _json_version_url(host: str, port: int) -> str:
    return f"http://{_host_header(host, port)}/json/version"


async def _connect_http(host: str, port: int, where: str) -> trio.SocketStream:
    with _failures_as_connect_error(
        f"could not connect to {where} (expected a browser started with --remote-debugging-port "
        "listening there)"
    ):
        return await trio.open_tcp_stream(host, port)


async def _get_json_version(stream: trio.abc.Stream, host: str, port: int, where: str) -> tuple[int, bytes]:
    """Send ``GET /json/version`` on ``stream``; return the status and the body."""
    request = h11.Request(
        method="GET",
        target="/json/version",
        headers=[("Host", _host_header(host, port)), ("Accept", "application/json")],
    )
    with _failures_as_connect_error(f"GET {where} failed"):
        head, body, _ = await _http_exchange(stream, request)
    return head.status_code, body


def _decode_json_version(status: int, body: bytes, where: str) -> dict[str, Any]:
    expected = "expected 200 and the browser's version as a JSON object"
    if status != 200:
        raise ConnectError(f"GET {where} answered HTTP {status} ({expected}): {body[:200]!r}")
    try:
        version = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ConnectError(f"GET {where} did not answer JSON ({expected}): {body[:200]!r}") from exc
    if not isinstance(version, dict):
        raise ConnectError(f"GET {where} answered JSON that is not an object ({expected}): {body[:200]!r}")
    return version


def _checked_ws_url(version: dict[str, Any], where: str) -> str:
    """``version["webSocketDebuggerUrl"]`` if it is a ``ws://`` URL; a ConnectError that says why not."""
    if "webSocketDebuggerUrl" not in version:
        keys = ", ".join(repr(key) for key in list(version)[:12]) or "none"
        if len(version) > 12:
            keys += f", ... ({len(version)} in all)"
        raise ConnectError(
            f"GET {where} answered a JSON object without webSocketDebuggerUrl (its keys: {keys}); "
            "expected the /json/version of a browser's DevTools endpoint"
        )
    url = version["webSocketDebuggerUrl"]
    if not isinstance(url, str):
        raise ConnectError(
            f"GET {where} answered a webSocketDebuggerUrl that is not a string: {url!r:.200} "
            f"({type(url).__name__}); expected a ws://host:port/... URL"
        )
    try:
        _split_ws_url(url)
    except ValueError:
        raise ConnectError(
            f"GET {where} answered webSocketDebuggerUrl {url!r:.200}; expected a ws://host:port/... URL"
        ) from None
    return url


async def fetch_json_version(host: str, port: int) -> dict[str, Any]:
    """GET ``/json/version`` from a browser's DevTools HTTP endpoint (bound it with ``trio.fail_after``).

    Returns:
        The decoded JSON: ``Browser``, ``Protocol-Version``, ``webSocketDebuggerUrl``, ...

    Raises:
        ConnectError: nothing listens there, or the answer is not a JSON object.
    """
    where = _json_version_url(host, port)
    async with await _connect_http(host, port, where) as stream:
        status, body = await _get_json_version(stream, host, port, where)
    return _decode_json_version(status, body, where)


async def discover_ws_url(host: str, port: int, settings: Settings) -> str:
    """The browser's ``ws://`` URL from its ``/json/version``; bounded by ``settings.connect_timeout``.

    The two waits are timed apart so that the error says which one stalled: nothing answering the TCP
    handshake, or a server that accepted and never answered.

    Raises:
        ConnectError: no answer, or not the answer a browser gives; the message says what was expected
            and what came.
    """
    where = _json_version_url(host, port)
    limit = settings.connect_timeout
    deadline = trio.current_time() + limit
    stream: trio.SocketStream | None = None
    with trio.move_on_at(deadline):
        stream = await _connect_http(host, port, where)
    if stream is None:
        raise ConnectError(
            f"could not connect to {where}: the TCP handshake got no answer within {limit} s "
            "(Settings.connect_timeout)"
        )
    answer: tuple[int, bytes] | None = None
    async with stream:
        with trio.move_on_at(deadline):
            answer = await _get_json_version(stream, host, port, where)
    if answer is None:
        raise ConnectError(
            f"{_host_header(host, port)} accepted the connection but did not answer GET /json/version "
            f"within {limit} s (Settings.connect_timeout)"
        )
    return _checked_ws_url(_decode_json_version(*answer, where), where)


# -- the websocket upgrade -------------------------------------------------------------------------------


async def websocket_upgrade(stream: trio.abc.Stream, host: str, port: int, target: str) -> bytes:
    """The HTTP upgrade on a connected ``stream``; returns the bytes that followed the 101 response.

    :func:`open_upgraded_stream` connects and calls this; alone, it upgrades a stream made elsewhere (a
    test's socket pair).

    Raises:
        RemoteProtocolError, h11.ProtocolError: the answer was not a valid websocket upgrade.
        OSError, trio.BrokenResourceError: the connection failed.
    """
    key = handshake_key()
    request = h11.Request(
        method="GET",
        target=target,
        headers=[
            ("Host", _host_header(host, port)),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", "13"),
        ],
    )
    head, body, rest = await _http_exchange(stream, request)
    if head.status_code != 101:
        text = body[:200].decode("utf-8", "replace")
        raise RemoteProtocolError(f"the server answered the upgrade with HTTP {head.status_code}: {text}")
    check_upgrade(head.status_code, list(head.headers), key)
    return rest


async def open_upgraded_stream(url: str, settings: Settings) -> tuple[trio.SocketStream, bytes]:
    """Connect to a ``ws://`` URL and perform the upgrade; bounded by ``settings.connect_timeout``.

    Returns:
        The upgraded TCP stream (TCP_NODELAY) and the bytes that arrived right behind the 101 response.

    Raises:
        ConnectError: the connection or the upgrade failed or took too long (the message says which).
        ValueError: ``url`` is not a ``ws://`` URL.
    """
    host, port, target = _split_ws_url(url)
    limit = settings.connect_timeout
    connected = False
    try:
        with trio.fail_after(limit), _failures_as_connect_error(f"could not open the websocket {url}"):
            stream = await trio.open_tcp_stream(host, port)
            connected = True
            try:
                # trio sets TCP_NODELAY on TCP streams already; say so here, where latency is decided.
                stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, True)
                rest = await websocket_upgrade(stream, host, port, target)
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
    except trio.TooSlowError:
        if connected:
            raise ConnectError(
                f"{_host_header(host, port)} accepted the connection but did not answer the websocket "
                f"upgrade for {url} within {limit} s (Settings.connect_timeout)"
            ) from None
        raise ConnectError(
            f"could not open the websocket {url}: the TCP handshake got no answer within {limit} s "
            "(Settings.connect_timeout)"
        ) from None
    return stream, rest
