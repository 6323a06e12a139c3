"""The datagen quickstarts: Connect schemas and a pure record generator for each.

Field names, value ranges and schema names follow Confluent's kafka-connect-datagen
quickstarts of the same name, so ksqlDB tutorials written for them work unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from connect.api import Schema, SchemaBuilder, Struct

__all__ = ["QUICKSTARTS", "Quickstart", "RecordRandom", "record_rng"]

# Timestamps come from the seed, never the clock, so reruns give identical records.
_REGISTER_TIME_MS = (1487715775521, 1519273364600)
_ORDER_TIME_MS = (1487715775521, 1519273364600)
#: 2024-01-01T00:00:00Z; pageview N is viewed about N seconds after it.
_VIEW_TIME_BASE_MS = 1704067200000


_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
#: Draws one record may take before its stream would reach the next record's.
_DRAWS_PER_RECORD = 1 << 20


class RecordRandom:
    """The random source of one record: SplitMix64 (Steele, Lea and Flood, 2014) started
    at a point that depends only on the seed and the record number.

    Record N's stream begins 2**20 steps after record N-1's, so records never share
    draws, record N is independent of which task makes it and of the records before
    it, and every process produces the same records. Creating one costs a few integer
    operations, where seeding a ``random.Random`` per record cost more than making the
    record.
    """

    __slots__ = ("_pool", "_range", "_state")

    def __init__(self, seed: int, iteration: int) -> None:
        base = _mix((seed * _GAMMA + 0x632BE59BD9B4E019) & _MASK64)
        self._state = (base + iteration * _DRAWS_PER_RECORD * _GAMMA) & _MASK64
        # Unused randomness: ``_pool`` is uniform in ``[0, _range)``. ``randint`` takes
        # what it needs by divmod and tops the pool up with 64 fresh bits whenever fewer
        # than 32 bits would be left over, which keeps each draw's bias below 2**-32.
        self._pool = 0
        self._range = 1

    def _next(self) -> int:
        self._state = state = (self._state + _GAMMA) & _MASK64
        return _mix(state)

    def randint(self, low: int, high: int) -> int:
        """An int in ``[low, high]``, both included."""
        span = high - low + 1
        if self._range < span << 32:
            self._pool = (self._pool << 64) | self._next()
            self._range <<= 64
        self._pool, drawn = divmod(self._pool, span)
        self._range //= span
        return low + drawn

    def uniform(self, low: float, high: float) -> float:
        """A float in ``[low, high)``."""
        return low + (high - low) * ((self._next() >> 11) * 2.0**-53)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.randint(0, len(options) - 1)]


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def record_rng(seed: int, iteration: int) -> RecordRandom:
    """The random source of record number ``iteration`` for ``seed``."""
    return RecordRandom(seed, iteration)


@dataclasses.dataclass(frozen=True)
class Quickstart:
    """One kind of generated record: the key field (its value is the record key) and a
    ``generate(rng, iteration)`` that fills a value struct."""

    name: str
    value_schema: Schema
    key_field: str
    generate: Callable[[RecordRandom, int], Struct]

    @property
    def key_schema(self) -> Schema:
        field = self.value_schema.field(self.key_field)
        assert field is not None
        return field.schema

    def record(self, seed: int, iteration: int) -> tuple[Any, Struct]:
        """``(key, value)`` of record number ``iteration`` for ``seed``."""
        value = self.generate(record_rng(seed, iteration), iteration)
        return value.get(self.key_field), value


USERS_SCHEMA = (
    SchemaBuilder.struct()
    .name("ksql.users")
    .field("registertime", Schema.INT64_SCHEMA)
    .field("userid", Schema.STRING_SCHEMA)
    .field("regionid", Schema.STRING_SCHEMA)
    .field("gender", Schema.STRING_SCHEMA)
    .build()
)

PAGEVIEWS_SCHEMA = (
    SchemaBuilder.struct()
    .name("ksql.pageviews")
    .field("viewtime", Schema.INT64_SCHEMA)
    .field("userid", Schema.STRING_SCHEMA)
    .field("pageid", Schema.STRING_SCHEMA)
    .build()
)

ADDRESS_SCHEMA = (
    SchemaBuilder.struct()
    .name("ksql.address")
    .field("city", Schema.STRING_SCHEMA)
    .field("state", Schema.STRING_SCHEMA)
    .field("zipcode", Schema.INT64_SCHEMA)
    .build()
)

ORDERS_SCHEMA = (
    SchemaBuilder.struct()
    .name("ksql.orders")
    .field("ordertime", Schema.INT64_SCHEMA)
    .field("orderid", Schema.INT64_SCHEMA)
    .field("itemid", Schema.STRING_SCHEMA)
    .field("orderunits", Schema.FLOAT64_SCHEMA)
    .field("address", ADDRESS_SCHEMA)
    .build()
)


# Values in field order; ``from_values`` validates them as ``put`` would.


def _user(rng: RecordRandom, iteration: int) -> Struct:
    return Struct.from_values(USERS_SCHEMA, [
        rng.randint(*_REGISTER_TIME_MS),
        f"User_{rng.randint(1, 9)}",
        f"Region_{rng.randint(1, 9)}",
        rng.choice(("MALE", "FEMALE", "OTHER")),
    ])


def _pageview(rng: RecordRandom, iteration: int) -> Struct:
    return Struct.from_values(PAGEVIEWS_SCHEMA, [
        _VIEW_TIME_BASE_MS + iteration * 1000 + rng.randint(0, 999),
        f"User_{rng.randint(1, 9)}",
        f"Page_{rng.randint(1, 99)}",
    ])


def _order(rng: RecordRandom, iteration: int) -> Struct:
    address = Struct.from_values(ADDRESS_SCHEMA, [
        f"City_{rng.randint(1, 99)}",
        f"State_{rng.randint(1, 99)}",
        rng.randint(10000, 99999),
    ])
    return Struct.from_values(ORDERS_SCHEMA, [
        rng.randint(*_ORDER_TIME_MS),
        iteration,
        f"Item_{rng.randint(1, 999)}",
        round(rng.uniform(0.1, 10.0), 2),
        address,
    ])


#: Quickstarts by the name ``quickstart`` (or ``schema``) takes.
QUICKSTARTS: dict[str, Quickstart] = {
    "users": Quickstart("users", USERS_SCHEMA, "userid", _user),
    "pageviews": Quickstart("pageviews", PAGEVIEWS_SCHEMA, "userid", _pageview),
    "orders": Quickstart("orders", ORDERS_SCHEMA, "orderid", _order),
}
