"""Plain Python answers (numbers, strings, booleans, None, lists, tuples, dicts) as JSON that keeps
their types, so a worker's answer reaches the judge as data and as exactly what was returned."""

from __future__ import annotations

import math
import numbers

MAX_DEPTH = 32


class NotPlainData(TypeError):
    pass


def encode(value, depth: int = 0):
    if depth > MAX_DEPTH:
        raise NotPlainData("the answer is nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else {"float": repr(number)}
    if isinstance(value, (list, tuple)):
        items = [encode(v, depth + 1) for v in value]
        return items if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        # numpy and torch scalars are numbers too.
        return encode(value.item(), depth + 1)
    raise NotPlainData(f"a {type(value).__module__}.{type(value).__qualname__}, which is not a number, string, list, tuple or dict")


def decode(data, depth: int = 0):
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, depth + 1) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, inner), = data.items()
        if tag == "tuple" and isinstance(inner, list):
            return tuple(decode(v, depth + 1) for v in inner)
        if tag == "float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if tag == "dict" and isinstance(inner, list):
            return {_key(decode(k, depth + 1)): decode(v, depth + 1) for k, v in (_pair(p) for p in inner)}
    raise ValueError("not an encoded answer")


def _pair(item):
    if not (isinstance(item, list) and len(item) == 2):
        raise ValueError("not an encoded answer")
    return item


def _key(key):
    if isinstance(key, list):
        raise ValueError("a list cannot be a dict key")
    return key
