"""Avro schema resolution: can a reader schema read data written with a writer schema?

Our implementation of the rules of the Avro specification ("Schema Resolution"), matching
what Java's ``SchemaCompatibility.checkReaderWriterCompatibility`` (which Confluent runs)
decides and reports:

- Named types match when their unqualified names are equal, or when the reader's aliases
  contain the writer's full name. A namespace-only change is compatible (AVRO-3622).
- Records: each reader field is matched by name, then by its aliases; a reader field with no
  writer counterpart needs a default. Writer fields the reader lacks are skipped.
- Promotions: int -> long, float, double; long -> float, double; float -> double;
  string <-> bytes.
- Enums: writer symbols missing in the reader are an error unless the reader has a default.
- Fixed: same name and size.  Arrays and maps: items and values, recursively.
- Unions: every branch of a writer union must be readable; a non-union writer needs one
  readable branch in the reader union.
- Logical types are ignored. Recursive types are guarded by an identity-keyed memo: a pair
  being compared further up the stack counts as compatible.

Each incompatibility carries Confluent's ``errorType`` and a JSON-pointer location.
"""

from __future__ import annotations

from dataclasses import dataclass

from .avro_model import Array, AvroType, Enum, Fixed, Map, Named, Record, Union

NAME_MISMATCH = "NAME_MISMATCH"
FIXED_SIZE_MISMATCH = "FIXED_SIZE_MISMATCH"
MISSING_ENUM_SYMBOLS = "MISSING_ENUM_SYMBOLS"
READER_FIELD_MISSING_DEFAULT_VALUE = "READER_FIELD_MISSING_DEFAULT_VALUE"
TYPE_MISMATCH = "TYPE_MISMATCH"
MISSING_UNION_BRANCH = "MISSING_UNION_BRANCH"

# reader type -> writer types it can read besides its own
PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}

# Confluent's descriptions; the two %s are the reader's and the writer's role ("new"/"old").
_DESCRIPTIONS = {
    FIXED_SIZE_MISMATCH: "The size of FIXED type field at path '{path}' in the %s schema does "
                         "not match with the %s schema",
    TYPE_MISMATCH: "The type (path '{path}') of a field in the %s schema does not match with "
                   "the %s schema",
    NAME_MISMATCH: "The name of the schema has changed (path '{path}')",
    MISSING_ENUM_SYMBOLS: "The %s schema is missing enum symbols '{info}' at path '{path}' in "
                          "the %s schema",
    MISSING_UNION_BRANCH: "The %s schema is missing a type inside a union field at path "
                          "'{path}' in the %s schema",
    READER_FIELD_MISSING_DEFAULT_VALUE: "The field '{info}' at path '{path}' in the %s schema "
                                        "has no default value and is missing in the %s schema",
}


@dataclass(frozen=True)
class AvroIncompatibility:
    error_type: str
    location: str  # JSON pointer into the reader schema, e.g. /fields/1/type
    info: str  # Confluent's additionalInfo

    def describe(self, reader: str, writer: str) -> str:
        """Confluent's verbose message, with the reader and writer roles named."""
        template = _DESCRIPTIONS[self.error_type].format(path=self.location, info=self.info)
        roles = iter((reader, writer))
        text = template.replace("%s", "\0")
        text = "".join(next(roles) if c == "\0" else c for c in text)
        return (f"{{errorType:'{self.error_type}', description:'{text}', "
                f"additionalInfo:'{self.info}'}}")


def check_avro(reader: AvroType, writer: AvroType) -> list[AvroIncompatibility]:
    """All the reasons ``reader`` cannot read data written with ``writer``; [] if it can."""
    found = _Checker().compatibility(reader, writer)
    return list(dict.fromkeys(found))


_IN_PROGRESS: list[AvroIncompatibility] = []


class _Checker:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[AvroIncompatibility]] = {}
        self.location: list[str] = []

    def _at(self) -> str:
        return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in self.location)

    def _fail(self, error_type: str, info: str, *extra: str) -> list[AvroIncompatibility]:
        self.location.extend(extra)
        where = self._at()
        del self.location[len(self.location) - len(extra):]
        return [AvroIncompatibility(error_type, where, info)]

    def compatibility(self, reader: AvroType, writer: AvroType,
                      token: str | None = None) -> list[AvroIncompatibility]:
        if token is not None:
            self.location.append(token)
        try:
            key = (id(reader), id(writer))
            cached = self.memo.get(key)
            if cached is _IN_PROGRESS:
                return []  # recursion: assume compatible, as Avro does
            if cached is not None:
                return cached
            self.memo[key] = _IN_PROGRESS
            result = self._calculate(reader, writer)
            self.memo[key] = result
            return result
        finally:
            if token is not None:
                self.location.pop()

    def _calculate(self, reader: AvroType, writer: AvroType) -> list[AvroIncompatibility]:
        if reader.type == writer.type:
            if isinstance(reader, Array) and isinstance(writer, Array):
                return self.compatibility(reader.items, writer.items, "items")
            if isinstance(reader, Map) and isinstance(writer, Map):
                return self.compatibility(reader.values, writer.values, "values")
            if isinstance(reader, Fixed) and isinstance(writer, Fixed):
                return self._names(reader, writer) + self._fixed_size(reader, writer)
            if isinstance(reader, Enum) and isinstance(writer, Enum):
                return self._names(reader, writer) + self._enum_symbols(reader, writer)
            if isinstance(reader, Record) and isinstance(writer, Record):
                return self._names(reader, writer) + self._fields(reader, writer)
            if isinstance(reader, Union) and isinstance(writer, Union):
                return self._union_branches(reader, writer)
            return []  # same primitive type
        if isinstance(writer, Union):  # every writer branch must be readable
            result: list[AvroIncompatibility] = []
            for branch in writer.branches:
                result += self.compatibility(reader, branch)
            return result
        if isinstance(reader, Union):
            for branch in reader.branches:
                if not self.compatibility(branch, writer):
                    return []
            return self._fail(MISSING_UNION_BRANCH,
                              f"reader union lacking writer type: {writer.type.upper()}")
        if writer.type in PROMOTIONS.get(reader.type, ()):
            return []
        return self._fail(
            TYPE_MISMATCH,
            f"reader type: {reader.type.upper()} not compatible with writer type: "
            f"{writer.type.upper()}",
        )

    def _union_branches(self, reader: Union, writer: Union) -> list[AvroIncompatibility]:
        result: list[AvroIncompatibility] = []
        for i, branch in enumerate(writer.branches):
            if self.compatibility(reader, branch, str(i)):
                result += self._fail(MISSING_UNION_BRANCH,
                                     f"reader union lacking writer type: {branch.type.upper()}",
                                     str(i))
        return result

    def _names(self, reader: Named, writer: Named) -> list[AvroIncompatibility]:
        if reader.name == writer.name or writer.fullname in reader.aliases:
            return []
        return self._fail(NAME_MISMATCH, f"expected: {writer.fullname}", "name")

    def _fixed_size(self, reader: Fixed, writer: Fixed) -> list[AvroIncompatibility]:
        if reader.size == writer.size:
            return []
        return self._fail(FIXED_SIZE_MISMATCH,
                          f"expected: {writer.size}, found: {reader.size}", "size")

    def _enum_symbols(self, reader: Enum, writer: Enum) -> list[AvroIncompatibility]:
        missing = sorted(set(writer.symbols) - set(reader.symbols))
        if not missing or reader.default is not None:
            return []
        return self._fail(MISSING_ENUM_SYMBOLS, "[" + ", ".join(missing) + "]", "symbols")

    def _fields(self, reader: Record, writer: Record) -> list[AvroIncompatibility]:
        result: list[AvroIncompatibility] = []
        self.location.append("fields")
        for pos, field in enumerate(reader.fields):
            self.location.append(str(pos))
            counterpart = writer.field_named(field.name)
            for alias in field.aliases:
                if counterpart is not None:
                    break
                counterpart = writer.field_named(alias)
            if counterpart is not None:
                result += self.compatibility(field.type, counterpart.type, "type")
            elif not field.has_default:
                result += self._fail(READER_FIELD_MISSING_DEFAULT_VALUE, field.name)
            self.location.pop()
        self.location.pop()
        return result
