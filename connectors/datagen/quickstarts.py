"""The datagen quickstarts: Connect schemas and a pure record generator for each.

Field names, value ranges and schema names follow Confluent's kafka-connect-datagen
quickstarts of the same name, so ksqlDB tutorials written for them work unchanged.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from connect.api import Schema, SchemaBuilder, Struct

__all__ = ["QUICKSTARTS", "Quickstart", "record_rng"]

# Timestamps come from the seed, never the clock, so reruns give identical records.
_REGISTER_TIME_MS = (1487715775521, 1519273364600)
_ORDER_TIME_MS = (1487715775521, 1519273364600)
#: 2024-01-01T00:00:00Z; pageview N is viewed about N seconds after it.
_VIEW_TIME_BASE_MS = 1704067200000


def record_rng(seed: int, iteration: int) -> random.Random:
    """The random source of one record. Seeding per record (a str seed is hashed with
    SHA-512, identically in every process) makes record N independent of which task
    makes it and of the records before it."""
    return random.Random(f"ferry-datagen/{seed}/{iteration}")


@dataclasses.dataclass(frozen=True)
class Quickstart:
    """One kind of generated record: the key field (its value is the record key) and a
    ``generate(rng, iteration)`` that fills a value struct."""

    name: str
    value_schema: Schema
    key_field: str
    generate: Callable[[random.Random, int], Struct]

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


def _user(rng: random.Random, iteration: int) -> Struct:
    return (
        Struct(USERS_SCHEMA)
        .put("registertime", rng.randint(*_REGISTER_TIME_MS))
        .put("userid", f"User_{rng.randint(1, 9)}")
        .put("regionid", f"Region_{rng.randint(1, 9)}")
        .put("gender", rng.choice(("MALE", "FEMALE", "OTHER")))
    )


def _pageview(rng: random.Random, iteration: int) -> Struct:
    return (
        Struct(PAGEVIEWS_SCHEMA)
        .put("viewtime", _VIEW_TIME_BASE_MS + iteration * 1000 + rng.randint(0, 999))
        .put("userid", f"User_{rng.randint(1, 9)}")
        .put("pageid", f"Page_{rng.randint(1, 99)}")
    )


def _order(rng: random.Random, iteration: int) -> Struct:
    address = (
        Struct(ADDRESS_SCHEMA)
        .put("city", f"City_{rng.randint(1, 99)}")
        .put("state", f"State_{rng.randint(1, 99)}")
        .put("zipcode", rng.randint(10000, 99999))
    )
    return (
        Struct(ORDERS_SCHEMA)
        .put("ordertime", rng.randint(*_ORDER_TIME_MS))
        .put("orderid", iteration)
        .put("itemid", f"Item_{rng.randint(1, 999)}")
        .put("orderunits", round(rng.uniform(0.1, 10.0), 2))
        .put("address", address)
    )


#: Quickstarts by the name ``quickstart`` (or ``schema``) takes.
QUICKSTARTS: dict[str, Quickstart] = {
    "users": Quickstart("users", USERS_SCHEMA, "userid", _user),
    "pageviews": Quickstart("pageviews", PAGEVIEWS_SCHEMA, "userid", _pageview),
    "orders": Quickstart("orders", ORDERS_SCHEMA, "orderid", _order),
}
