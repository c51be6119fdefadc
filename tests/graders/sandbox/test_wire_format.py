"""The wire format: whatever a child sends, the grader decodes only allowed data, or refuses it."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from graders.sandbox import wire
from graders.sandbox.protocol import Handle

SANDBOX = Path(wire.__file__).parent


def tensor_entry(**overrides: Any) -> dict[str, Any]:
    return {"$": "tensor", "dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8, **overrides}


def test_values_round_trip() -> None:
    value = {
        "t": torch.randn(2, 3),
        "a": np.arange(4),
        "l": [1, 2.5, None, "x", (True,)],
        "h": Handle(3, "f"),
    }
    header, parts = wire.encode(value)
    payload = bytearray(b"".join(bytes(p) for p in parts))
    back = wire.decode(header, payload)
    assert torch.equal(back["t"], value["t"]) and np.array_equal(back["a"], value["a"])
    assert back["l"] == [1, 2.5, None, "x", (True,)] and back["h"] == Handle(3, "f")


def test_answers_encoded_apart_decode_from_one_payload_once_shifted() -> None:
    """A batch reply: each answer encoded on its own, its buffers placed after the earlier ones."""
    first, second = {"k": torch.randn(2, 3), "n": [np.arange(3)]}, (torch.ones(4), "x")
    h1, p1 = wire.encode(first)
    h2, p2 = wire.encode(second)
    shifted = wire.shift_offsets(h2, sum(len(p) for p in p1))
    payload = bytearray(b"".join(bytes(p) for p in [*p1, *p2]))
    back = wire.decode({"$": "list", "items": [h1, shifted]}, payload)
    assert torch.equal(back[0]["k"], first["k"]) and np.array_equal(back[0]["n"][0], first["n"][0])
    assert torch.equal(back[1][0], second[0]) and back[1][1] == "x"


@pytest.mark.parametrize(
    "entry",
    [
        tensor_entry(dtype="object"),
        tensor_entry(dtype="complex64"),
        tensor_entry(shape=[3]),  # 12 bytes claimed by the shape, 8 by nbytes
        tensor_entry(nbytes=16),  # past the end of the payload
        tensor_entry(offset=-4),
        tensor_entry(shape=[-1, -2]),
        tensor_entry(shape="2"),
        tensor_entry(shape=[1] * 40),
        tensor_entry(shape=[2**40, 2**40, 0], nbytes=0),  # no bytes, but strides that overflow
        {"$": "ndarray", "dtype": "float32", "shape": [2**40, 2**40, 0], "offset": 0, "nbytes": 0},
        tensor_entry(shape=[2**70], nbytes=0),
        {"$": "ndarray", "dtype": "O", "shape": [1], "offset": 0, "nbytes": 8},
        {"$": "pickle", "data": "gASVAAAAAAAAAAA="},
        {"$": "torch.dtype", "name": "complex64"},
        {"$": "torch.dtype", "name": ["float32"]},
        {"$": "dict", "items": [[[1], 2]]},
        {"$": "handle", "id": "1"},
        {"plain": "object"},
        [1, 2],
    ],
)
def test_malformed_values_are_refused(entry: Any) -> None:
    with pytest.raises(wire.WireError):
        wire.decode(entry, bytearray(8))


def test_deep_nesting_is_refused() -> None:
    value: Any = 1
    for _ in range(100):
        value = {"$": "list", "items": [value]}
    with pytest.raises(wire.WireError):
        wire.decode(value, bytearray())


def test_bool_bytes_are_normalised() -> None:
    payload = bytearray([0, 1, 2, 255])
    t = wire.decode({"$": "tensor", "dtype": "bool", "shape": [4], "offset": 0, "nbytes": 4}, payload)
    a = wire.decode({"$": "ndarray", "dtype": "bool", "shape": [4], "offset": 0, "nbytes": 4}, payload)
    assert t.tolist() == [False, True, True, True] and a.tolist() == [False, True, True, True]
    assert t.view(torch.uint8).tolist() == [0, 1, 1, 1]


def test_decoded_tensors_are_fresh_writable_copies() -> None:
    payload = bytearray(np.arange(2, dtype=np.float32).tobytes())
    t = wire.decode(tensor_entry(), payload)
    t += 1
    assert payload == bytearray(np.arange(2, dtype=np.float32).tobytes())


def test_torch_dtypes_travel_by_name_from_the_allow_list() -> None:
    header, parts = wire.encode([torch.float64, torch.bfloat16])
    assert wire.decode(header, bytearray()) == [torch.float64, torch.bfloat16]
    with pytest.raises(wire.WireError):
        wire.decode({"$": "torch.dtype", "name": "complex128"}, bytearray())
    with pytest.raises(wire.WireError):
        wire.decode({"$": "torch.dtype", "name": "__class__"}, bytearray())


def test_the_grader_refuses_to_send_objects() -> None:
    with pytest.raises(TypeError):
        wire.encode(object())
    with pytest.raises(TypeError):
        wire.encode(torch.zeros(2, dtype=torch.complex64))


def test_a_frame_over_the_cap_is_refused_before_it_is_read() -> None:
    a, b = socket.socketpair()
    with a, b:
        wire.send_frame(a, {"ok": 1}, [memoryview(bytes(4096))])
        with pytest.raises(wire.WireError):
            wire.recv_frame(b, max_bytes=1024)


def test_a_refused_frame_names_the_limit_it_broke() -> None:
    """A 9 MiB header under a 32 MiB frame cap breaks the 8 MiB header limit, and says so."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall(wire.PREFIX.pack(9 * 2**20, 0))
        with pytest.raises(wire.WireError) as header:
            wire.recv_frame(b, max_bytes=32 * 2**20)
        a.sendall(wire.PREFIX.pack(100, 40 * 2**20))
        with pytest.raises(wire.WireError) as frame:
            wire.recv_frame(b, max_bytes=32 * 2**20)
    assert "header" in str(header.value) and "8 MiB" in str(header.value), header.value
    assert "9 MiB" in str(header.value) and "32 MiB" not in str(header.value), header.value
    assert "32 MiB" in str(frame.value) and "header" not in str(frame.value), frame.value
    assert "40 MiB" in str(frame.value), frame.value


def test_an_unreadable_header_is_refused() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(wire.PREFIX.pack(3, 0) + b"{{{")
        with pytest.raises(wire.WireError):
            wire.recv_frame(b, max_bytes=1024)


def test_no_pickle_anywhere_in_the_sandbox() -> None:
    forbidden = re.compile(
        r"^\s*(import|from)\s+(pickle|cPickle|dill|marshal)\b|torch\.load\(|np\.load\(|allow_pickle", re.M
    )
    for path in SANDBOX.glob("*.py"):
        assert not forbidden.search(path.read_text()), path
