"""The wire format between the grader and a submission's process. No pickle, anywhere.

A frame is `<u32 header length><u32 payload length>`, a UTF-8 JSON header, then the raw
bytes of every tensor and array in it, back to back. In the header a value is one of

    null, true/false, a number, a string            (as JSON; NaN and infinities allowed)
    {"$": "list" | "tuple", "items": [value, ...]}
    {"$": "dict", "items": [[key, value], ...]}     (keys are strings or ints)
    {"$": "tensor" | "ndarray", "dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24}
    {"$": "handle", "id": 3, "attr": null}          (an object that stays in the child)
    {"$": "torch.dtype", "name": "float64"}         (a torch dtype from the allow-list below)
    {"$": "remote", "id": 2, "methods": ["step"]}   (an object that stays with the grader:
                                                     graders/sandbox/remote.py; the child sends
                                                     back only the id)

The grader decodes what a child sends with `torch.frombuffer` / `np.frombuffer` over fresh
copies, after checking the dtype against an allow-list and the shape against the byte
count and the frame against its size cap; bool data is re-derived as `bytes != 0`. Nothing
the child sends is ever executed or unpickled: at worst it is wrong data.

This module is imported by the fork server before any submission runs, so the functions
it keeps references to (torch.frombuffer, Tensor.contiguous, ...) are the originals even
if a submission monkeypatches torch or numpy later; a submission that patches this module
itself only corrupts its own replies, which the grader checks like any other data.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from graders.sandbox.protocol import Handle
from graders.sandbox.remote import Remote, RemoteProxy

PREFIX = struct.Struct("<II")
MAX_DEPTH = 32
MAX_DIMS = 16
# The most elements a decoded array may claim, counting a 0-sized dimension as 1: torch and
# NumPy compute strides from these, and [2**40, 2**40, 0] (no bytes at all) would overflow them.
MAX_ELEMENTS = 1 << 40
MAX_HEADER_BYTES = 8 * 1024 * 1024
IOV_MAX = 1024  # buffers one sendmsg takes (Linux's UIO_MAXIOV)

# Captured before any submission code runs (see the module docstring).
_Tensor = torch.Tensor
_ndarray = np.ndarray
_generic = np.generic
_detach = torch.Tensor.detach
_contiguous = torch.Tensor.contiguous
_reshape = torch.Tensor.reshape
_view = torch.Tensor.view
_to_numpy = torch.Tensor.numpy
_frombuffer = torch.frombuffer
_torch_empty = torch.empty
_np_frombuffer = np.frombuffer
_np_ascontiguousarray = np.ascontiguousarray
_np_item = np.generic.item
_NoTorchFunction = torch._C.DisableTorchFunctionSubclass
_dumps = json.dumps
_loads = json.loads

TORCH_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_TORCH_NAMES = {dtype: name for name, dtype in TORCH_DTYPES.items()}
NUMPY_DTYPES: dict[str, np.dtype[Any]] = {
    name: np.dtype(name)
    for name in (
        "float64",
        "float32",
        "float16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "bool",
    )
}


class WireError(Exception):
    """A frame or a value that breaks the format or a cap (never the grader's own fault)."""


class FrameTooLarge(WireError):
    """A frame refused unread; the message names the limit it broke (the header's or the frame's)."""


def human_size(n: int) -> str:
    """9437184 -> '9 MiB', 9856614 -> '9.4 MiB': three significant figures in the largest unit."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


# --- framing ---------------------------------------------------------------------------------


def send_frame(sock: socket.socket, header: Any, parts: list[memoryview] | None = None) -> None:
    """Send one frame with one sendmsg (a write per part would wake the reader once per part)."""
    data = _dumps(header, separators=(",", ":")).encode()
    payload = sum(len(p) for p in parts or ())
    views = [memoryview(PREFIX.pack(len(data), payload) + data)]
    views += [part for part in parts or () if len(part)]
    while views:
        sent = sock.sendmsg(views[:IOV_MAX])
        while sent and views:  # drop what went out; a partial send leaves the rest of a buffer
            if sent >= len(views[0]):
                sent -= len(views.pop(0))
            else:
                views[0], sent = views[0][sent:], 0


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytearray:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("deadline passed while reading a frame")
            sock.settimeout(remaining)
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError("connection closed")
        got += n
    return buf


def recv_frame(
    sock: socket.socket, *, max_bytes: int, deadline: float | None = None, what: str = "frame"
) -> tuple[Any, bytearray]:
    """Read one frame: (decoded JSON header, payload bytes). EOFError when the peer is gone.

    A frame over `max_bytes`, or a header over MAX_HEADER_BYTES, is refused before it is read
    (FrameTooLarge, naming the limit that was broken; `what` names the frame: "reply", ...).
    """
    header_len, payload_len = PREFIX.unpack(_recv_exact(sock, PREFIX.size, deadline))
    total = header_len + payload_len
    if total > max_bytes:
        raise FrameTooLarge(
            f"a {human_size(total)} {what} is over the {human_size(max_bytes)} limit on a {what}"
        )
    if header_len > MAX_HEADER_BYTES:
        raise FrameTooLarge(
            f"a {human_size(header_len)} header is over the {human_size(MAX_HEADER_BYTES)} "
            f"limit on a {what}'s header"
        )
    raw = _recv_exact(sock, header_len, deadline)
    payload = _recv_exact(sock, payload_len, deadline)
    try:
        header = _loads(raw.decode())
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise WireError(f"unreadable header: {exc}") from None
    return header, payload


# --- encoding --------------------------------------------------------------------------------


class Encoder:
    """Turns values into a JSON-able header plus a list of byte buffers.

    `keep` decides what happens to a value that is not plain data: the child passes a
    function that stores the object and returns its Handle; the grader passes None, and
    such a value is a TypeError (a check may only send data and handles).
    """

    def __init__(
        self, keep: Callable[[Any], Handle] | None = None, remote: Callable[[Remote], int] | None = None
    ) -> None:
        self.keep = keep
        self.remote = remote  # the grader's: registers a Remote and gives its id (graders/sandbox/remote.py)
        self.parts: list[memoryview] = []
        self.size = 0

    def _buffer(self, kind: str, dtype: str, shape: list[int], data: memoryview) -> dict[str, Any]:
        entry = {"$": kind, "dtype": dtype, "shape": shape, "offset": self.size, "nbytes": len(data)}
        self.parts.append(data)
        self.size += len(data)
        return entry

    def _tensor(self, value: torch.Tensor) -> dict[str, Any]:
        with _NoTorchFunction():
            t = _detach(value)
            if type(t) is not _Tensor or t.layout != torch.strided or t.device.type != "cpu":
                raise TypeError(f"cannot send a {t.layout} tensor on {t.device}")
            name = _TORCH_NAMES.get(t.dtype)
            if name is None:
                raise TypeError(f"cannot send a tensor of dtype {t.dtype}")
            t = _contiguous(t)
            shape = [int(n) for n in t.shape]
            raw = _to_numpy(_view(_reshape(t, (-1,)), torch.uint8))
        return self._buffer("tensor", name, shape, memoryview(raw).cast("B"))  # type: ignore[arg-type]

    def _array(self, value: np.ndarray) -> dict[str, Any]:
        a = _np_ascontiguousarray(value)
        name = a.dtype.name
        if name not in NUMPY_DTYPES or not a.dtype.isnative:
            raise TypeError(f"cannot send an array of dtype {a.dtype}")
        return self._buffer("ndarray", name, [int(n) for n in a.shape], memoryview(a).cast("B"))  # type: ignore[arg-type]

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"the value nests deeper than {MAX_DEPTH} levels")
        kind = type(value)  # type(), unlike isinstance, cannot be faked with a __class__ property
        if value is None or kind is bool or kind is int or kind is str:
            return value
        if kind is float:
            return value
        if isinstance(value, Handle):
            return {"$": "handle", "id": value.id, "attr": value.attr}
        if kind is RemoteProxy:  # the child handing a grader's object back: its id only
            return {"$": "remote", "id": value.remote_id}
        if kind is Remote and self.remote is not None:
            return {"$": "remote", "id": self.remote(value), "methods": list(value.methods)}
        if issubclass(kind, _Tensor):
            return self._tensor(value)
        if issubclass(kind, _ndarray):
            return self._array(value)
        if kind is torch.dtype and value in _TORCH_NAMES:  # an optional argument: KVCache(dtype=...)
            return {"$": "torch.dtype", "name": _TORCH_NAMES[value]}
        if issubclass(kind, _generic) and self.keep is not None:
            item = _np_item(value)
            if type(item) in (bool, int, float):
                return item
        if kind is list or kind is tuple:
            return {"$": kind.__name__, "items": [self.encode(v, depth + 1) for v in value]}
        if kind is dict and all(type(k) is str or type(k) is int for k in value):
            return {"$": "dict", "items": [[k, self.encode(v, depth + 1)] for k, v in value.items()]}
        if self.keep is not None:
            handle = self.keep(value)
            return {"$": "handle", "id": handle.id, "attr": handle.attr}
        raise TypeError(f"cannot send {kind.__name__} to a submission")


def shift_offsets(value: Any, by: int) -> Any:
    """An encoded value whose buffers now start `by` bytes later in the payload (batch replies)."""
    if type(value) is dict:
        if value.get("$") in ("tensor", "ndarray"):
            return {**value, "offset": value["offset"] + by}
        return {k: shift_offsets(v, by) for k, v in value.items()}
    if type(value) is list:
        return [shift_offsets(v, by) for v in value]
    return value


def encode(
    value: Any, keep: Callable[[Any], Handle] | None = None, remote: Callable[[Remote], int] | None = None
) -> tuple[Any, list[memoryview]]:
    encoder = Encoder(keep, remote)
    return encoder.encode(value), encoder.parts


# --- decoding --------------------------------------------------------------------------------


def _shape(raw: Any) -> list[int]:
    if type(raw) is not list or len(raw) > MAX_DIMS or any(type(n) is not int or n < 0 for n in raw):
        raise WireError(f"bad shape {str(raw)[:200]}")
    if math.prod(max(n, 1) for n in raw) > MAX_ELEMENTS:  # every field bounded before any use
        raise WireError(f"shape {str(raw)[:200]} is too large")
    return raw


def _span(entry: dict[str, Any], itemsize: int, shape: list[int], payload: bytearray) -> bytearray:
    offset, nbytes = entry.get("offset"), entry.get("nbytes")
    if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
        raise WireError("bad offset or size")
    if math.prod(shape) * itemsize != nbytes or offset + nbytes > len(payload):
        raise WireError(f"shape {shape} does not match {nbytes} bytes at offset {offset}")
    return payload[offset : offset + nbytes]  # a fresh copy


def _decode_tensor(entry: dict[str, Any], payload: bytearray) -> torch.Tensor:
    dtype = TORCH_DTYPES.get(entry.get("dtype"))  # type: ignore[arg-type]
    if dtype is None:
        raise WireError(f"dtype {entry.get('dtype')!r} is not allowed")
    shape = _shape(entry.get("shape"))
    itemsize = torch.empty((), dtype=dtype).element_size()
    data = _span(entry, itemsize, shape, payload)
    if not data:
        return _torch_empty(shape, dtype=dtype)
    if dtype is torch.bool:  # any byte other than 0/1 would be an invalid bool: normalise
        return (_frombuffer(data, dtype=torch.uint8) != 0).reshape(shape)
    return _frombuffer(data, dtype=dtype).reshape(shape)


def _decode_array(entry: dict[str, Any], payload: bytearray) -> np.ndarray:
    dtype = NUMPY_DTYPES.get(entry.get("dtype"))  # type: ignore[arg-type]
    if dtype is None:
        raise WireError(f"dtype {entry.get('dtype')!r} is not allowed")
    shape = _shape(entry.get("shape"))
    data = _span(entry, dtype.itemsize, shape, payload)
    if dtype == np.bool_:
        return (_np_frombuffer(data, dtype=np.uint8) != 0).reshape(shape)
    return _np_frombuffer(data, dtype=dtype).reshape(shape)


def decode(
    value: Any,
    payload: bytearray,
    resolve: Callable[[Handle], Any] | None = None,
    depth: int = 0,
    *,
    remote: Callable[[int, tuple[str, ...]], Any] | None = None,
) -> Any:
    """Rebuild a value; handles become Handle objects, or `resolve(handle)` in the child; a remote
    becomes `remote(id, methods)` (the child's proxy, the grader's object), refused without it."""
    if depth > MAX_DEPTH + 1:
        raise WireError("value nested too deep")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is float or kind is str:
        return value
    if kind is not dict:
        raise WireError(f"unexpected {kind.__name__} in a header")
    tag = value.get("$")
    if tag == "tensor":
        return _decode_tensor(value, payload)
    if tag == "ndarray":
        return _decode_array(value, payload)
    if tag == "torch.dtype":
        name = value.get("name")
        dtype = TORCH_DTYPES.get(name) if type(name) is str else None
        if dtype is None:
            raise WireError(f"dtype {value.get('name')!r} is not allowed")
        return dtype
    items = value.get("items")
    if tag in ("list", "tuple"):
        if type(items) is not list:
            raise WireError("bad list")
        seq = [decode(v, payload, resolve, depth + 1, remote=remote) for v in items]
        return seq if tag == "list" else tuple(seq)
    if tag == "dict":
        if type(items) is not list:
            raise WireError("bad dict")
        out = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in (str, int):
                raise WireError("bad dict item")
            out[pair[0]] = decode(pair[1], payload, resolve, depth + 1, remote=remote)
        return out
    if tag == "handle":
        handle = decode_handle(value)
        return resolve(handle) if resolve is not None else handle
    if tag == "remote":
        rid, methods = value.get("id"), value.get("methods", [])
        if type(rid) is not int or type(methods) is not list or not all(type(m) is str for m in methods):
            raise WireError("bad remote reference")
        if remote is None:
            raise WireError("a reference to the grader's object where none may be")
        return remote(rid, tuple(methods))
    raise WireError(f"unknown tag {tag!r}")


def decode_handle(value: Any) -> Handle:
    if type(value) is not dict or value.get("$") != "handle":
        raise WireError("expected a handle")
    hid, attr = value.get("id"), value.get("attr")
    if type(hid) is not int or not (attr is None or type(attr) is str):
        raise WireError("bad handle")
    return Handle(hid, attr)
