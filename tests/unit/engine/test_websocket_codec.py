"""The sans-I/O websocket codec and handshake helpers, without sockets."""

from __future__ import annotations

import ast
import inspect
import itertools
import os
import struct
import time
from collections.abc import Callable
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine._framing
import engine._ws_codec
from engine._ws_codec import (
    CloseReceived,
    Message,
    Ping,
    Pong,
    WebSocketProtocolError,
    accept_for,
    check_upgrade,
    encode_frame,
    mask_payload,
)
from engine.lowlevel import LocalProtocolError, Opcode, RemoteProtocolError, WebSocketCodec


def fixed_keys(n: int) -> bytes:
    """Masking keys 37 fa 21 3d (RFC 6455 section 5.7), repeated."""
    return bytes.fromhex("37fa213d") * (n // 4)


def counting_keys() -> tuple[list[bytes], Callable[[int], bytes]]:
    seen: list[bytes] = []
    counter = itertools.count(1)

    def keys(n: int) -> bytes:
        out = b"".join(struct.pack("!I", next(counter)) for _ in range(n // 4))
        seen.append(out)
        return out

    return seen, keys


def server_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    return encode_frame(opcode, payload, None, fin=fin)


def parse_client_frames(data: bytes) -> list[tuple[bool, int, bytes, bytes]]:
    """What a server would see: (fin, opcode, mask key, unmasked payload) for each frame."""
    frames = []
    pos = 0
    while pos < len(data):
        first, second = data[pos], data[pos + 1]
        assert second & 0x80, "client frames must be masked"
        size = second & 0x7F
        pos += 2
        if size == 126:
            (size,) = struct.unpack("!H", data[pos : pos + 2])
            pos += 2
        elif size == 127:
            (size,) = struct.unpack("!Q", data[pos : pos + 8])
            pos += 8
        key = data[pos : pos + 4]
        pos += 4
        payload = mask_payload(data[pos : pos + size], key)
        pos += size
        frames.append((bool(first & 0x80), first & 0x0F, key, payload))
    return frames


# -- what the codec is --------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [engine._ws_codec, engine._framing], ids=["ws_codec", "framing"])
def test_the_codecs_import_nothing_that_does_io(module: ModuleType) -> None:
    tree = ast.parse(inspect.getsource(module))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported}.isdisjoint({"trio", "socket", "h11", "select"})
    assert imported.isdisjoint({"engine._transport", "engine._websocket", "engine._http"})


def test_errors_are_split_by_blame() -> None:
    for error in (LocalProtocolError, RemoteProtocolError):
        assert issubclass(error, WebSocketProtocolError)
    assert not issubclass(LocalProtocolError, RemoteProtocolError)
    assert not issubclass(RemoteProtocolError, LocalProtocolError)


def test_opcodes_are_the_rfcs() -> None:
    assert [(op.name, int(op)) for op in Opcode] == [
        ("CONTINUATION", 0x0),
        ("TEXT", 0x1),
        ("BINARY", 0x2),
        ("CLOSE", 0x8),
        ("PING", 0x9),
        ("PONG", 0xA),
    ]
    ((_, opcode, _, _),) = parse_client_frames(WebSocketCodec().encode_messages([b"{}"]))
    assert Opcode(opcode) is Opcode.TEXT


# -- masking and encoding ----------------------------------------------------------------------------


@pytest.fixture(params=["C", "Python"])
def masking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test that takes it runs with the websockets package's C masking and with the integer XOR."""
    if request.param == "Python":
        monkeypatch.setattr(engine._ws_codec, "_c_mask", None)
    else:
        assert getattr(engine._ws_codec, "_c_mask") is not None, "websockets' speedups did not import"
    return str(request.param)


def test_rfc_masked_hello(masking: str) -> None:
    codec = WebSocketCodec(mask_keys=fixed_keys)
    assert codec.encode_messages([b"Hello"]) == bytes.fromhex("818537fa213d7f9f4d5158")


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 125, 126, 16 * 1024, 16 * 1024 + 3, 70001])
def test_a_frames_mask_is_the_rfcs_xor_in_either_path(size: int, masking: str) -> None:
    payload = os.urandom(size)
    key = os.urandom(4)
    frame = encode_frame(Opcode.TEXT, payload, key)
    assert frame.endswith(key + bytes(b ^ key[i % 4] for i, b in enumerate(payload)))


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 125, 126, 65535, 65536, 70001])
def test_mask_matches_naive_xor_and_undoes_itself(size: int) -> None:
    payload = os.urandom(size)
    key = os.urandom(4)
    masked = mask_payload(payload, key)
    assert masked == bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    assert mask_payload(masked, key) == payload


@pytest.mark.parametrize(
    ("size", "length_bytes"),
    [(0, 0), (125, 0), (126, 2), (65535, 2), (65536, 8), (300_000, 8)],
)
def test_length_encodings(size: int, length_bytes: int, masking: str) -> None:
    frame = WebSocketCodec().encode_messages([b"a" * size])
    assert len(frame) == 2 + length_bytes + 4 + size
    ((fin, opcode, _key, payload),) = parse_client_frames(frame)
    assert (fin, opcode, payload) == (True, Opcode.TEXT, b"a" * size)


def test_batch_is_one_buffer_with_a_fresh_key_per_frame() -> None:
    seen, keys = counting_keys()
    codec = WebSocketCodec(mask_keys=keys)
    messages = [b'{"id":1}', b'{"id":2,"method":"X"}', b"x" * 200]
    frames = parse_client_frames(codec.encode_messages(messages))
    assert [payload for _, _, _, payload in frames] == messages
    assert len({key for _, _, key, _ in frames}) == 3
    assert len(seen) == 1, "one call to the key source for the whole batch"


def test_binary_opcode() -> None:
    ((_, opcode, _, payload),) = parse_client_frames(
        WebSocketCodec().encode_messages([b"\x00\x01"], binary=True)
    )
    assert (opcode, payload) == (Opcode.BINARY, b"\x00\x01")


# -- decoding ----------------------------------------------------------------------------------------


def test_rfc_unmasked_hello_in_any_split() -> None:
    data = bytes.fromhex("810548656c6c6f")
    for cut in range(len(data) + 1):
        codec = WebSocketCodec()
        events = codec.receive_data(data[:cut]) + codec.receive_data(data[cut:])
        assert events == [Message(b"Hello")]


def test_byte_by_byte_64bit_frame() -> None:
    payload = os.urandom(70_000)
    data = server_frame(Opcode.BINARY, payload)
    assert data[1] == 127
    codec = WebSocketCodec()
    events = []
    for i in range(0, len(data), 1):
        events += codec.receive_data(data[i : i + 1])
    assert events == [Message(payload, binary=True)]


def test_rfc_fragmented_text_with_ping_in_between() -> None:
    codec = WebSocketCodec(mask_keys=fixed_keys)
    data = (
        bytes.fromhex("010348656c")  # "Hel", not final
        + server_frame(Opcode.PING, b"?")
        + bytes.fromhex("80026c6f")  # "lo", final continuation
    )
    assert codec.receive_data(data) == [Ping(b"?"), Message(b"Hello")]
    ((fin, opcode, _, payload),) = parse_client_frames(codec.data_to_send())
    assert (fin, opcode, payload) == (True, Opcode.PONG, b"?")
    assert codec.data_to_send() == b""


def test_many_fragments_and_messages_in_one_chunk() -> None:
    parts = [b"a" * 10, b"b" * 200, b"c" * 70_000]
    data = (
        server_frame(Opcode.TEXT, parts[0], fin=False)
        + server_frame(Opcode.CONTINUATION, parts[1], fin=False)
        + server_frame(Opcode.CONTINUATION, parts[2])
        + server_frame(Opcode.TEXT, b"{}")
        + server_frame(Opcode.TEXT, b"[1]")[:3]
    )
    codec = WebSocketCodec()
    assert codec.receive_data(data) == [Message(b"".join(parts)), Message(b"{}")]
    assert codec.receive_data(b"1]") == [Message(b"[1]")]


def test_payload_is_never_decoded() -> None:
    invalid_utf8 = b'{"x":"\xff\xfe"}'
    assert WebSocketCodec().receive_data(server_frame(Opcode.TEXT, invalid_utf8)) == [Message(invalid_utf8)]


def test_pong_is_reported() -> None:
    assert WebSocketCodec().receive_data(server_frame(Opcode.PONG, b"p")) == [Pong(b"p")]


def test_ping_frame_we_send() -> None:
    ((_, opcode, _, payload),) = parse_client_frames(WebSocketCodec().ping(b"hi"))
    assert (opcode, payload) == (Opcode.PING, b"hi")
    with pytest.raises(LocalProtocolError, match="125"):
        WebSocketCodec().ping(b"x" * 126)


def test_close_from_server_is_answered_and_ends_decoding() -> None:
    codec = WebSocketCodec()
    data = server_frame(Opcode.CLOSE, struct.pack("!H", 1001) + b"going away") + server_frame(
        Opcode.TEXT, b"late"
    )
    assert codec.receive_data(data) == [CloseReceived(1001, "going away")]
    ((_, opcode, _, payload),) = parse_client_frames(codec.data_to_send())
    assert (opcode, payload[:2]) == (Opcode.CLOSE, struct.pack("!H", 1001))
    assert codec.close_sent
    assert codec.receive_data(server_frame(Opcode.TEXT, b"later")) == []


def test_close_without_status() -> None:
    codec = WebSocketCodec()
    assert codec.receive_data(server_frame(Opcode.CLOSE, b"")) == [CloseReceived(None, "")]


def test_close_we_send_once() -> None:
    codec = WebSocketCodec()
    ((_, opcode, _, payload),) = parse_client_frames(codec.close(1000, "bye"))
    assert (opcode, payload) == (Opcode.CLOSE, struct.pack("!H", 1000) + b"bye")
    assert codec.close() == b""
    with pytest.raises(LocalProtocolError, match="after the websocket was closed"):
        codec.encode_messages([b"{}"])
    # The server's answer to our close needs no second close frame.
    assert codec.receive_data(server_frame(Opcode.CLOSE, struct.pack("!H", 1000))) == [
        CloseReceived(1000, "")
    ]
    assert codec.data_to_send() == b""


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (encode_frame(Opcode.TEXT, b"x", b"abcd"), "masked"),
        (bytes([0x80 | 0x40 | Opcode.TEXT, 0]), "reserved"),
        (server_frame(Opcode.CONTINUATION, b"x"), "continuation"),
        (server_frame(Opcode.TEXT, b"a", fin=False) + server_frame(Opcode.TEXT, b"b"), "before the previous"),
        (server_frame(Opcode.PING, b"x" * 126), "control frame"),
        (server_frame(Opcode.PING, b"x", fin=False), "control frame"),
        (server_frame(0x3, b""), "opcode"),
        (server_frame(0xB, b""), "opcode"),
        (server_frame(Opcode.CLOSE, b"\x03"), "1-byte"),
        (bytes([0x81, 127]) + struct.pack("!Q", 1 << 63), "most significant"),
    ],
)
def test_protocol_errors(data: bytes, match: str) -> None:
    with pytest.raises(RemoteProtocolError, match=match):
        WebSocketCodec().receive_data(data)


@pytest.mark.parametrize("read_size", [1, 3, 7, 100, 1000, 4096, 65536])
def test_a_flood_cut_into_reads_of_any_size_decodes_every_frame_in_order(read_size: int) -> None:
    # A read that ends mid-frame leaves a tail that the next read completes (then joined to it, so the
    # frames after it take the fast path); a 16-bit frame, a 64-bit one and a ping are in the stream too.
    payloads = [f'{{"method":"E","n":{i}}}'.encode() * (1 + i % 5) for i in range(300)]
    payloads[150] = b"x" * 70_000  # 64-bit length: grows in the buffer, never joined
    payloads[200] = b"y" * 5_000  # 16-bit length
    wire = b"".join(server_frame(Opcode.TEXT, p) for p in payloads[:100])
    wire += server_frame(Opcode.PING, b"!")
    wire += b"".join(server_frame(Opcode.TEXT, p) for p in payloads[100:])
    codec = WebSocketCodec()
    events = []
    for i in range(0, len(wire), read_size):
        events += codec.receive_data(wire[i : i + read_size])
    expected = [Message(p) for p in payloads]
    assert events == [*expected[:100], Ping(b"!"), *expected[100:]]
    assert codec.control_owed == 6 + 1  # the ping's pong


def test_large_frame_in_small_chunks_is_linear() -> None:
    """50 MB in 64 KiB pieces: re-scanning or re-copying the buffer per piece would take minutes."""
    payload = b"y" * (50 * 1024 * 1024)
    data = server_frame(Opcode.TEXT, payload)
    codec = WebSocketCodec()
    started = time.perf_counter()
    events = []
    step = 64 * 1024
    for i in range(0, len(data), step):
        events += codec.receive_data(data[i : i + step])
    elapsed = time.perf_counter() - started
    assert events == [Message(payload)]
    assert elapsed < 5.0


# -- handshake ---------------------------------------------------------------------------------------

RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ=="
RFC_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_accept_value_from_rfc() -> None:
    assert accept_for(RFC_KEY) == RFC_ACCEPT


def good_headers() -> list[tuple[bytes, bytes]]:
    return [
        (b"upgrade", b"WebSocket"),
        (b"connection", b"keep-alive, Upgrade"),
        (b"sec-websocket-accept", RFC_ACCEPT.encode()),
    ]


def test_check_upgrade_accepts_a_good_answer() -> None:
    check_upgrade(101, good_headers(), RFC_KEY)


@pytest.mark.parametrize(
    ("status", "drop", "match"),
    [
        (200, None, "HTTP 200"),
        (101, b"upgrade", "Upgrade: websocket"),
        (101, b"connection", "Connection: Upgrade"),
        (101, b"sec-websocket-accept", "Accept"),
    ],
)
def test_check_upgrade_rejects(status: int, drop: bytes | None, match: str) -> None:
    headers = [(name, value) for name, value in good_headers() if name != drop]
    with pytest.raises(RemoteProtocolError, match=match):
        check_upgrade(status, headers, RFC_KEY)


def test_mask_keys_come_from_bulk_urandom_and_never_repeat_a_slice() -> None:
    from engine._ws_codec import _KeyPool

    pool = _KeyPool(size=8)
    keys = [pool(4) for _ in range(6)]  # three refills of 8 bytes
    assert all(len(key) == 4 for key in keys)
    assert len(set(keys)) == 6  # 32 random bits each: a repeat here would be a slicing bug
    assert len(pool(20)) == 20  # a request over the pool's size still gets all its bytes


def test_single_frames_take_the_sources_keys_in_order_drawn_ahead() -> None:
    seen, keys = counting_keys()
    codec = WebSocketCodec(mask_keys=keys)
    frames = [codec.encode_messages([b"{}"]) for _ in range(300)]
    assert [frame[2:6] for frame in frames] == [struct.pack("!I", n) for n in range(1, 301)]
    assert len(seen) == 2, "one call to the key source per 256 single frames"
    assert [payload for frame in frames for _, _, _, payload in parse_client_frames(frame)] == [b"{}"] * 300


def test_frames_from_the_default_codec_carry_fresh_keys() -> None:
    codec = WebSocketCodec()
    frames = [codec.encode_messages([b"{}"]) for _ in range(3)] + [codec.encode_messages([b"{}", b"[]"])]
    keys = [frame[2:6] for frame in frames[:3]] + [frames[3][2:6], frames[3][10:14]]
    assert len(set(keys)) == 5


_FRAMES = st.lists(
    st.tuples(
        st.sampled_from(
            [(Opcode.TEXT, True), (Opcode.BINARY, True), (Opcode.PING, True), (Opcode.TEXT, False)]
        ),
        st.sampled_from([0, 1, 125, 126, 127, 300, 0xFFFF, 0x10000]),
    ),
    max_size=6,
)


def _wire_of(frames: list[tuple[tuple[Opcode, bool], int]]) -> bytes:
    """The server frames drawn from ``_FRAMES``: a data frame after an unfinished one continues it."""
    wire = b""
    fragment_open = False
    for (drawn, fin), drawn_size in frames:
        data_frame = drawn in (Opcode.TEXT, Opcode.BINARY)
        opcode = Opcode.CONTINUATION if data_frame and fragment_open else drawn
        size = drawn_size if data_frame else min(drawn_size, 125)
        wire += encode_frame(opcode, bytes([size % 251]) * size, None, fin=fin)
        if data_frame:
            fragment_open = not fin
    return wire


@settings(max_examples=60, deadline=None)
@given(_FRAMES, st.data())
def test_a_read_of_whole_frames_decodes_as_the_same_bytes_fed_one_at_a_time(
    frames: list[tuple[tuple[Opcode, bool], int]], data: st.DataObject
) -> None:
    # Whole frames in one read take the fast path (straight from the read); fed a byte at a time they go
    # through the buffer. Same events either way, fragments and control frames included.
    wire = _wire_of(frames)
    cut = data.draw(st.integers(0, len(wire)))
    whole = WebSocketCodec()
    at_once = whole.receive_data(wire[:cut]) + whole.receive_data(wire[cut:])
    bytewise = WebSocketCodec()
    one_by_one = [event for i in range(len(wire)) for event in bytewise.receive_data(wire[i : i + 1])]
    assert at_once == one_by_one


@settings(max_examples=60, deadline=None)
@given(_FRAMES, st.data())
def test_payloads_given_to_receive_data_are_its_messages_in_the_same_order(
    frames: list[tuple[tuple[Opcode, bool], int]], data: st.DataObject
) -> None:
    # The transport's way: whole data frames at the front of a read go straight into its list of payloads;
    # with the rest (pings, fragments, cut frames) they are the messages the plain call returns, in order.
    wire = _wire_of(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=3)))
    reads = [wire[a:b] for a, b in itertools.pairwise([0, *cuts, len(wire)])]
    plain, batched = WebSocketCodec(), WebSocketCodec()
    for read in reads:
        expected = plain.receive_data(read)
        payloads: list[bytes] = []
        events = batched.receive_data(read, payloads)
        got = payloads + [e.data for e in events if type(e) is Message]
        assert got == [e.data for e in expected if type(e) is Message]
        others = [e for e in expected if type(e) is not Message]
        assert [e for e in events if type(e) is not Message] == others


def test_whole_frames_at_the_front_of_a_read_go_to_the_payloads_and_the_rest_to_the_events() -> None:
    codec = WebSocketCodec()
    payloads: list[bytes] = [b"before"]
    ping = server_frame(Opcode.PING, b"p")
    read = server_frame(Opcode.TEXT, b"a") + server_frame(Opcode.BINARY, b"b") + ping + server_frame(1, b"c")
    events = codec.receive_data(read, payloads)
    assert payloads == [b"before", b"a", b"b"]
    assert events == [Ping(b"p"), Message(b"c", False)]


# -- single_message: a read that is exactly one data frame ----------------------------------------------

_ONE_FRAME = st.tuples(
    st.sampled_from([Opcode.TEXT, Opcode.BINARY, Opcode.CONTINUATION, Opcode.PING, Opcode.CLOSE]),
    st.sampled_from([0, 1, 2, 125, 126, 127, 300, 0xFFFF, 0x10000]),
    st.booleans(),  # fin
    st.booleans(),  # masked (a server must not mask)
    st.sampled_from([b"", b"\x81", b"\x81\x01x", b"\x89\x00"]),  # what follows the frame in the read
    st.integers(0, 3),  # bytes cut off the end
)


@settings(max_examples=300, deadline=None)
@given(_ONE_FRAME, st.integers(1, 0x20000))
def test_single_message_is_receive_data_for_one_whole_data_frame_and_none_otherwise(
    drawn: tuple[Opcode, int, bool, bool, bytes, int], limit: int
) -> None:
    opcode, size, fin, masked, after, cut = drawn
    if opcode >= Opcode.CLOSE:
        size = min(size, 125)
    payload = bytes([size % 251]) * size
    frame = encode_frame(opcode, payload, fixed_keys(4) if masked else None, fin=fin)
    wire = (frame + after)[: len(frame) + len(after) - cut]
    taken = WebSocketCodec(max_inbound_bytes=limit).single_message(wire)
    one = opcode in (Opcode.TEXT, Opcode.BINARY) and fin and not masked and wire == frame
    if one and size < 0x10000 and size <= limit:
        assert taken == payload
        assert WebSocketCodec(max_inbound_bytes=limit).receive_data(wire) == [
            Message(payload, opcode == Opcode.BINARY)
        ]
    else:
        assert taken is None  # left to receive_data, which frames, buffers or refuses it


def test_single_message_is_none_while_a_frame_or_a_message_is_unfinished() -> None:
    whole = server_frame(Opcode.TEXT, b"abc")
    codec = WebSocketCodec()
    assert codec.receive_data(server_frame(Opcode.TEXT, b"xyz")[:3]) == []  # a cut frame is buffered
    assert codec.single_message(whole) is None
    assert codec.receive_data(b"yz" + whole) == [Message(b"xyz"), Message(b"abc")]
    assert codec.single_message(whole) == b"abc"  # nothing buffered any more
    assert codec.receive_data(server_frame(Opcode.TEXT, b"part", fin=False)) == []  # a message begun
    assert codec.single_message(whole) is None
    closed = WebSocketCodec()
    closed.receive_data(server_frame(Opcode.CLOSE, struct.pack("!H", 1000)))
    assert closed.single_message(whole) is None  # after a close nothing more is a message


@pytest.mark.parametrize(
    "wire",
    [
        b"\x81\x7f" + bytes(127),  # 127 is the 64-bit length marker, not a length
        b"\x81\x7e" + bytes(126),  # 126 is the 16-bit marker
        b"\x81\x85" + bytes(133),  # a masked frame (0x85 = mask bit + 5) as long as its second byte
        b"\x01\x03abc",  # not final
        b"\x91\x03abc",  # a reserved bit
        b"\x81\x7e\x00\x03abc",  # fine: a 16-bit length of 3 (longer than needed, as receive_data takes)
    ],
)
def test_single_message_reads_the_length_as_rfc_6455_writes_it(wire: bytes) -> None:
    taken = WebSocketCodec().single_message(wire)
    if wire == b"\x81\x7e\x00\x03abc":
        assert taken == b"abc"
        assert WebSocketCodec().receive_data(wire) == [Message(b"abc")]
    else:
        assert taken is None
