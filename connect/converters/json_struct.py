"""Struct encoders generated per schema: the JsonConverter's hot path for records.

A source connector writes one struct schema for millions of records (Debezium's envelope
holds ~30 fields), so the struct encoder is generated once per schema as Python source:
it unpacks the struct's values into locals and formats them in one f-string, with each
field's common case inline (an ``int`` in range, a ``str`` without control characters,
``None`` for an optional field, ``True``/``False``). Anything else goes to the field's
ordinary encoder from ``json_encode``, which handles defaults, subclasses, logical types
and raises the errors, so the generated text is byte for byte what the ordinary
encoders write. The source holds no schema text (names, docs): field names, their
encoders and constants are passed in as variables, so no schema can inject code.

When the optional C module (``_json_speedups.c``) is built, the generated encoder only
checks the struct and hands its values to a ``FieldsEncoder``, which takes the same fast
paths in C (a third of the time for a Debezium envelope) and calls the same field
encoders for everything else; the f-string version is the fallback and the reference the
tests hold the C one to.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from connect.api.data import Field, Schema, Struct, Type
from connect.api.errors import DataError
from connect.converters.json_schema import quote

try:  # the optional C writer; see _json_speedups.c
    from connect.converters._json_speedups import FieldsEncoder
except ImportError:  # no compiler at install time: the generated f-strings do it all
    FieldsEncoder = None

__all__ = ["compile_struct_encoder"]

# Field kinds the C writer has a fast path for (its KIND_* constants).
_OTHER, _INT, _STR, _BOOL = 0, 1, 2, 3

Encode = Callable[[Any], str]

_encode_basestring: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
_INT_RANGES: dict[Type, tuple[int, int]] = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
# How many struct schema objects equal to (but not the same object as) the compiled one
# an encoder remembers as already compared: a connector that rebuilds its schemas (a
# table's schema read again after a restart of its stream) would otherwise pay a deep
# schema comparison for every value.
_MATCHED_LIMIT = 16
# How many structs an encoder watches for string fields that keep one value.
_WATCHED = 16


def compile_struct_encoder(schema: Schema, field_encoders: list[Encode],
                           on_null: Callable[[], str], *, null_is_null: list[bool],
                           accelerated: bool = True) -> Encode:
    """The encoder of values of the STRUCT ``schema``.

    ``field_encoders`` are the fields' complete encoders (index order) and
    ``null_is_null[i]`` says whether field ``i`` writes ``null`` for None (optional, and
    no default replaces it), so that case can be inlined. ``on_null`` gives the text of a
    None struct. ``accelerated=False`` keeps to the Python version even when the C writer
    is built (the tests compare the two).
    """
    fields = schema.fields
    names: dict[str, Any] = {"Struct": Struct, "S": schema, "EB": _encode_basestring,
                             "U": "\\u00", "OTHER": _other_values(schema, on_null)}
    # What comes before each field's value: the opening brace or a comma, and its name.
    prefixes = [("{" if f.index == 0 else ",") + quote(f.name) + ":" for f in fields]
    if accelerated and FieldsEncoder is not None:
        specs = []
        for f, prefix, enc, plain_null in zip(fields, prefixes, field_encoders, null_is_null,
                                              strict=True):
            kind, low, high = _fast_kind(f.schema)
            specs.append((prefix, kind, plain_null, low, high, enc))
        names["FAST"] = FieldsEncoder(specs, "}" if fields else "{}")
        return _exec(_C_SOURCE, names)
    inline: list[str] = []
    for f, prefix, enc, plain_null in zip(fields, prefixes, field_encoders, null_is_null,
                                          strict=True):
        i = f.index
        names[f"P{i}"], names[f"E{i}"] = prefix, enc
        inline.append(_inline(f.schema, i, plain_null, names))
    # The string fields (their encoders' own fast path), which may turn out constant.
    strings = [f.index for f in fields if _is_plain_string(f.schema)]
    encode = _exec(_source(fields, inline, watch=bool(strings)), names)
    if strings:
        names["SEEN"] = _Watch(encode, fields, inline, strings, names)
    return encode


def _source(fields: list[Field], inline: list[str], *, watch: bool) -> str:
    """The encoder's source: unpack the struct's values, format them in one f-string."""
    parts = [f"{{P{f.index}}}{{{expr}}}" for f, expr in zip(fields, inline, strict=True)]
    # Python 3.11 f-strings allow neither backslashes nor the enclosing quote inside an
    # expression: the f-string is double-quoted, expressions use single quotes, and
    # "\\u00" is the variable U.
    values = "".join(f"v{f.index}, " for f in fields)
    body = 'f"' + "".join(parts) + ("}}" if fields else "{{}}") + '"'
    unpack = f"({values}) = " if fields else ""
    seen = ("    SEEN(" + "".join(f"v{i}, " for i in range(len(fields))) + ")\n"
            if watch else "")
    return (
        "def encode(value):\n"
        "    if type(value) is Struct and value._schema is S:\n"
        f"        {unpack}value._values\n"
        "    else:\n"
        "        values = OTHER(value)\n"
        "        if type(values) is str:\n"
        "            return values\n"
        f"        {unpack}values\n"
        f"{seen}"
        f"    return {body}\n"
    )


# The generated encoder when the C writer is built: the struct check, then C.
_C_SOURCE = (
    "def encode(value):\n"
    "    if type(value) is Struct and value._schema is S:\n"
    "        return FAST(value._values)\n"
    "    values = OTHER(value)\n"
    "    if type(values) is str:\n"
    "        return values\n"
    "    return FAST(values)\n"
)


def _exec(source: str, names: dict[str, Any]) -> Encode:
    # A fixed file name: a schema name may hold characters compile() refuses (NUL).
    exec(compile(source, "<json struct encoder>", "exec"), names)
    return names["encode"]  # type: ignore[no-any-return]


def _is_plain_string(schema: Schema) -> bool:
    return schema.type is Type.STRING and not (
        schema.name is not None and schema.name.startswith("org.apache.kafka.connect.data."))


class _Watch:
    """The first ``_WATCHED`` structs an encoder writes pass their values here; string
    fields that held the same object in all of them (a CDC source block's connector,
    server, database and table names, a constant ``op``) then get that value's text
    behind an identity test, and the encoder's code is replaced by the version with
    those tests and no watch.

    The text is the field encoder's own for that very (immutable) object, so any value
    that is not that object takes the ordinary path: the output never depends on what
    was watched, only the speed does. The replaced ``__code__`` keeps the function
    object, which the encoders of enclosing structs hold.
    """

    def __init__(self, encode: Encode, fields: list[Field], inline: list[str],
                 strings: list[int], names: dict[str, Any]) -> None:
        self.encode, self.fields, self.inline, self.names = encode, fields, inline, names
        self.strings = strings
        self.first: tuple[Any, ...] | None = None
        self.count = 0
        self.done = False

    def __call__(self, *values: Any) -> None:
        first = self.first
        if first is None:
            self.first = values
            return
        self.strings = [i for i in self.strings if values[i] is first[i]]
        self.count += 1
        if (self.count < _WATCHED and self.strings) or self.done:
            return
        self.done = True  # a thread still in the watching code may call once more
        inline, names = list(self.inline), self.names
        for i in self.strings:
            value = first[i]
            if type(value) is not str:
                continue
            # The text first: a thread that sees C{i} set sees K{i} set too.
            names[f"K{i}"] = names[f"E{i}"](value)
            names[f"C{i}"] = value
            inline[i] = f"(K{i} if v{i} is C{i} else {inline[i]})"
        specialised = _exec(_source(self.fields, inline, watch=False),
                            {**names, "encode": None})
        self.encode.__code__ = specialised.__code__


def _fast_kind(schema: Schema) -> tuple[int, int, int]:
    """The common case a field's values have a fast path for: (kind, low, high), the
    range for integers."""
    if schema.name is not None and schema.name.startswith("org.apache.kafka.connect.data."):
        return _OTHER, 0, 0  # logical types: the encoder converts them
    if schema.type in _INT_RANGES:
        return (_INT, *_INT_RANGES[schema.type])
    if schema.type is Type.STRING:
        return _STR, 0, 0
    if schema.type is Type.BOOLEAN:
        return _BOOL, 0, 0
    return _OTHER, 0, 0


def _inline(schema: Schema, i: int, plain_null: bool, names: dict[str, Any]) -> str:
    """A Python expression for field ``i``'s JSON text (or an int f-string formats as
    its JSON text), falling back to its encoder ``E{i}`` outside the common case."""
    v, fallback = f"v{i}", f"E{i}(v{i})"
    kind, low, high = _fast_kind(schema)
    if kind == _INT:
        names[f"L{i}"], names[f"H{i}"] = low, high
        fast: str | None = f"{v} if type({v}) is int and L{i} <= {v} <= H{i}"
    elif kind == _STR:
        # encode_basestring escapes what Jackson escapes, but control characters with
        # lower-case hex: those (rare) strings take the encoder, which fixes the case.
        fast = f"o if type({v}) is str and U not in (o := EB({v}))"
    elif kind == _BOOL:
        fast = f"'true' if {v} is True else 'false' if {v} is False"
    else:
        fast = None
    if plain_null:
        fast = f"'null' if {v} is None else {fast}" if fast else f"'null' if {v} is None"
    return f"({fast} else {fallback})" if fast else fallback


def _other_values(schema: Schema, on_null: Callable[[], str]) -> Callable[[Any], Any]:
    """For a value that is not a ``Struct`` of exactly ``schema``: its values list when it
    is a struct of an equal schema (defaults aside), else the text of None, else a
    ``DataError`` as Kafka's ``Mismatching schema``."""
    matched: dict[int, Schema] = {}

    def other(value: Any) -> Any:
        if not isinstance(value, Struct):
            if value is None:
                return on_null()
            raise DataError(f"Invalid type for STRUCT: {type(value).__name__} "
                            f"({value!r:.80})")
        own = value.schema
        if own is schema or matched.get(id(own)) is own:
            return value._values
        if not own.equals_ignoring_default(schema):
            raise DataError(
                f"Mismatching schema: expected a Struct of {schema!r}, got {value!r:.200}"
            )
        if len(matched) >= _MATCHED_LIMIT:
            matched.clear()
        matched[id(own)] = own  # the strong reference keeps the id from being reused
        return value._values

    return other
