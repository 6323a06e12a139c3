"""Schema text to JSON with bounded nesting, so that deep input is an error, not a crash.

The parsers, canonical writers and compatibility checkers walk a schema recursively; a
document nested deeper than Python's recursion limit would escape them as a
``RecursionError`` (a 500). Every schema document is therefore checked against
``MAX_NESTING`` once, right after decoding, and rejected with a ``SchemaError`` (42201)
naming the limit. Confluent's JSON reader stops at 1000 levels (Jackson's default
``maxNestingDepth``); this limit is lower because the walks here spend several Python frames
per level (jsonschema's metaschema check about five: 128 levels leave room below the
recursion limit on a request thread), and no real schema comes near it.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import SchemaError

__all__ = ["MAX_NESTING", "NestingError", "check_nesting", "load_json"]

#: Deepest nesting of JSON arrays and objects accepted in a schema document or request.
MAX_NESTING = 128


class NestingError(SchemaError):
    """The document is nested deeper than ``MAX_NESTING``."""


def check_nesting(value: Any, limit: int = MAX_NESTING) -> None:
    """Raise ``NestingError`` if ``value`` nests containers deeper than ``limit``
    (iterative: any depth is checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            raise NestingError(f"it is nested deeper than {limit} levels of JSON arrays "
                               "and objects")
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list) and child)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(text: str | bytes, what: str, limit: int = MAX_NESTING, *,
              allow_nan: bool = True) -> Any:
    """Decode ``text``; ``SchemaError`` for text that is not JSON or nests too deep, and
    (unless ``allow_nan``) for ``NaN``/``Infinity``, which strict JSON does not have."""
    try:
        value = json.loads(text) if allow_nan else json.loads(text,
                                                              parse_constant=_no_constant)
    except RecursionError:
        raise NestingError(f"Invalid {what}: it is nested deeper than {limit} levels of "
                           "JSON arrays and objects") from None
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"Invalid {what}: not valid JSON ({exc})") from exc
    if isinstance(value, dict | list):
        try:
            check_nesting(value, limit)
        except NestingError as exc:
            raise NestingError(f"Invalid {what}: {exc}") from None
    return value
