"""Every numeric field of submit in every msgpack encoding, from Python.

msgpack-python writes floats as float64 and ints in their smallest form; a
client in another language may pick others. The daemon must take every
encoding of a value that fits the field, and reject one that does not with
an invalid_argument error that names the field.
"""

from __future__ import annotations

import math
import socket
import struct

import msgpack
import pytest

import batchd


def encodings_int(v: int):
    out = []
    if -32 <= v <= 127:
        out.append(("fixint", struct.pack(">b", v) if v < 0 else bytes([v])))
    for name, code, fmt, lo, hi in [
        ("uint8", 0xCC, ">B", 0, 2**8 - 1), ("uint16", 0xCD, ">H", 0, 2**16 - 1), ("uint32", 0xCE, ">I", 0, 2**32 - 1),
        ("uint64", 0xCF, ">Q", 0, 2**64 - 1), ("int8", 0xD0, ">b", -(2**7), 2**7 - 1),
        ("int16", 0xD1, ">h", -(2**15), 2**15 - 1), ("int32", 0xD2, ">i", -(2**31), 2**31 - 1),
        ("int64", 0xD3, ">q", -(2**63), 2**63 - 1),
    ]:
        if lo <= v <= hi:
            out.append((name, bytes([code]) + struct.pack(fmt, v)))
    return out


def encodings_float(v: float):
    out = [("float32", b"\xca" + struct.pack(">f", v)), ("float64", b"\xcb" + struct.pack(">d", v))]
    if v == math.trunc(v):
        out += encodings_int(int(v))
    return out


def submit(req_id: int, field: str, raw: bytes) -> bytes:
    fields = {"type": "submit", "id": req_id, "prompt": "hi"}
    fields["seed" if field == "max_tokens" else "max_tokens"] = 2
    body = bytes([0x80 | (len(fields) + 1)])
    for k, v in fields.items():
        body += msgpack.packb(k) + msgpack.packb(v)
    body += msgpack.packb(field) + raw
    return struct.pack(">I", len(body)) + body


class Raw:
    def __init__(self, path: str) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(path)
        self.send(msgpack.packb({"type": "hello", "id": 1, "version": 1}))
        assert self.read()["type"] == "hello"

    def send(self, body: bytes) -> None:
        self.s.sendall(struct.pack(">I", len(body)) + body)

    def read(self) -> dict:
        def exact(n: int) -> bytes:
            b = b""
            while len(b) < n:
                chunk = self.s.recv(n - len(b))
                assert chunk, "the daemon closed the connection"
                b += chunk
            return b

        (n,) = struct.unpack(">I", exact(4))
        return msgpack.unpackb(exact(n), raw=False)

    def outcome(self, frame: bytes) -> dict:
        self.s.sendall(frame)
        while True:
            m = self.read()
            if m["type"] in ("done", "error"):
                return m


VALID = {
    "max_tokens": encodings_int(2) + encodings_int(200),
    "top_k": encodings_int(40),
    "seed": encodings_int(7) + encodings_int(2**63 - 1) + encodings_int(-1),  # -1: a fresh seed
    "priority": encodings_int(3) + encodings_int(-5),
    "temperature": encodings_float(0.8) + encodings_float(1.0),
    "top_p": encodings_float(0.9),
    "min_p": encodings_float(0.05),
    "repetition_penalty": encodings_float(1.1),
}


def test_every_encoding_of_every_field(synth_daemon):
    raw = Raw(synth_daemon)
    req_id = 10
    for field, encs in VALID.items():
        for name, enc in encs:
            req_id += 1
            m = raw.outcome(submit(req_id, field, enc))
            assert m["type"] == "done", f"{field} as {name}: {m}"


@pytest.mark.parametrize("field,raw_value", [
    ("max_tokens", b"\xcf" + struct.pack(">Q", 2**64 - 1)),
    ("seed", b"\xd3" + struct.pack(">q", -2)),
    ("seed", b"\xcf" + struct.pack(">Q", 2**64 - 1)),
    ("priority", b"\xcf" + struct.pack(">Q", 2**64 - 1)),
    ("top_k", b"\xcf" + struct.pack(">Q", 2**63)),
    ("max_tokens", b"\xcb" + struct.pack(">d", 2.5)),
    ("temperature", b"\xcb" + struct.pack(">d", -1.0)),
    ("temperature", b"\xcb" + struct.pack(">d", float("inf"))),
    ("temperature", b"\xcb" + struct.pack(">d", 1e-40)),
    ("temperature", msgpack.packb("0.5")),
])
def test_values_that_do_not_fit_are_typed_errors(synth_daemon, field, raw_value):
    m = Raw(synth_daemon).outcome(submit(11, field, raw_value))
    assert m["type"] == "error" and m["code"] == "invalid_argument", m
    assert field in m["message"], m
    assert "invalid argument:" not in m["message"], m


def test_client_float_fields(synth_daemon):
    # The day-one failure: Python floats are float64 on the wire.
    with batchd.Client(synth_daemon) as c:
        r = c.generate("Once upon a time", max_tokens=10, temperature=0.8, top_p=0.9, min_p=0.05,
                       repetition_penalty=1.1, seed=3)
        assert r.finish_reason in ("length", "stop") and 1 <= len(r.tokens) <= 10


def test_stats_and_health_are_typed(synth_daemon):
    with batchd.Client(synth_daemon) as c:
        c.generate("x", max_tokens=2)
        s = c.stats()
        assert isinstance(s, batchd.Stats) and isinstance(s.ttft, batchd.Dist) and isinstance(s.plan, batchd.Plan)
        assert s.kv_blocks_total > 0 and s.submitted >= 1 and s["running"] == s.running
        assert s.plan.kv_cache_type in ("f16", "f32") and s.plan.kv_bytes_per_token > 0
        h = c.health()
        assert isinstance(h, batchd.Health) and h.state == "ready" and h.model.context == 256
        # The tests run as root, an admin: an explicit reload runs, and this
        # daemon's empty config file is refused with a typed error.
        with pytest.raises(batchd.InvalidRequest, match="empty"):
            c.reload()


def test_structured_output(synth_daemon):
    with batchd.Client(synth_daemon) as c:
        r = c.generate("x", max_tokens=40, choice=["yes", "no"])
        assert r.text in ("yes", "no") and r.finish_reason == "stop"
        r = c.generate("x", max_tokens=60, json_schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
                                                        "required": ["n"]})
        assert r.finish_reason == "stop"
        import json
        assert 0 <= json.loads(r.text)["n"] <= 9
        with pytest.raises(batchd.InvalidRequest, match="uniqueItems"):
            c.generate("x", max_tokens=5, json_schema={"type": "array", "uniqueItems": True})
        with pytest.raises(batchd.InvalidRequest, match="line 1"):
            c.generate("x", max_tokens=5, grammar="root ::= [a-")
