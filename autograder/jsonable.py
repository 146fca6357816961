"""Plain Python answers (numbers, strings, booleans, None, lists, tuples, dicts) as JSON that keeps
their types, so a worker's answer reaches the judge as data and as exactly what was returned.

Tensors (the quantised weights and scales of Act 7) travel the same way when the caller passes a
list for their bytes: the JSON holds each tensor's dtype, shape and where its bytes lie in one block
sent beside it, and the judge rebuilds them from that block alone, checking every length; nothing
is unpickled."""

from __future__ import annotations

import math
import numbers
import sys

MAX_DEPTH = 32
# The tensor dtypes an answer may hold, by torch's name; anything else is refused.
TENSOR_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


class NotPlainData(TypeError):
    pass


def encode(value, depth: int = 0, blobs: list | None = None):
    """``value`` as JSON data; with ``blobs`` (a list), tensors too, their bytes appended to it."""
    if depth > MAX_DEPTH:
        raise NotPlainData("the answer is nested too deeply")
    torch = sys.modules.get("torch")
    if blobs is not None and torch is not None and isinstance(value, torch.Tensor) and value.dim() > 0:
        return _encode_tensor(torch, value, blobs)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else {"float": repr(number)}
    if isinstance(value, (list, tuple)):
        items = [encode(v, depth + 1, blobs) for v in value]
        return items if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1, blobs), encode(v, depth + 1, blobs)] for k, v in value.items()]}
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        # numpy and torch scalars are numbers too.
        return encode(value.item(), depth + 1, blobs)
    raise NotPlainData(f"a {type(value).__module__}.{type(value).__qualname__}, which is not a number, string, list, tuple or dict")


def _encode_tensor(torch, value, blobs: list) -> dict:
    name = str(value.dtype).removeprefix("torch.")
    if name not in TENSOR_DTYPES:
        raise NotPlainData(f"a tensor of {name}, which an answer cannot hold (use one of {', '.join(TENSOR_DTYPES)})")
    data = value.detach().to("cpu").contiguous()
    raw = data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""
    offset = sum(len(b) for b in blobs)
    blobs.append(raw)
    return {"tensor": [name, [int(d) for d in data.shape], offset, len(raw)]}


def decode(data, depth: int = 0, payload: bytes = b""):
    """The answer ``encode`` wrote; its tensors are rebuilt from ``payload``, the bytes sent beside it."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, depth + 1, payload) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, inner), = data.items()
        if tag == "tuple" and isinstance(inner, list):
            return tuple(decode(v, depth + 1, payload) for v in inner)
        if tag == "float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if tag == "dict" and isinstance(inner, list):
            return {_key(decode(k, depth + 1, payload)): decode(v, depth + 1, payload) for k, v in (_pair(p) for p in inner)}
        if tag == "tensor" and isinstance(inner, list):
            return _decode_tensor(inner, payload)
    raise ValueError("not an encoded answer")


def _decode_tensor(inner: list, payload: bytes):
    import torch

    if len(inner) != 4:
        raise ValueError("not an encoded tensor")
    name, shape, offset, length = inner
    if name not in TENSOR_DTYPES or not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ValueError("not an encoded tensor")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (offset, length)) or offset + length > len(payload):
        raise ValueError("a tensor whose bytes were not sent")
    dtype = getattr(torch, name)
    count = math.prod(shape)
    if count * torch.empty(0, dtype=dtype).element_size() != length:
        raise ValueError("a tensor whose bytes do not match its shape")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(payload[offset : offset + length]), dtype=torch.uint8).view(dtype).reshape(shape)


def _pair(item):
    if not (isinstance(item, list) and len(item) == 2):
        raise ValueError("not an encoded answer")
    return item


def _key(key):
    if isinstance(key, list):
        raise ValueError("a list cannot be a dict key")
    return key
