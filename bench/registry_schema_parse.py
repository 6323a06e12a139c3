"""Time to parse an Avro schema against its number of fields: the registry's parser is linear.

Run from the repository root (a script, not a test):

    python3 bench/registry_schema_parse.py [--fields 1000,10000,100000] [--repeats 5]

For each size, a record schema with that many fields (alternately ``string``, an ``int``
with a default, and a nullable ``long``) is parsed from its text by the registry's
``parse_schema("AVRO", text)`` (our checks, fastavro's own parse, the canonical form) and,
as the reference in the same run, by ``json.loads`` plus ``fastavro.parse_schema`` on the
same text. The registry is linear when its ratio to fastavro (itself linear) stays flat
as the size grows; its time per field against the smallest size is shown too, but on this
machine even fastavro's time per field grows several-fold at 100,000 fields (memory and
garbage-collector effects), so the ratio is the figure to read. Also reported: the
registry's time for the normalized form and the equivalence digest that a
``normalize=true`` registration or a lookup computes. Medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fastavro  # noqa: E402

from schema_registry.schemas import parse_schema  # noqa: E402


def schema_text(fields: int) -> str:
    kinds = ({"type": "string"}, {"type": "int", "default": 0},
             {"type": ["null", "long"], "default": None})
    return json.dumps({"type": "record", "name": "Wide", "namespace": "bench",
                       "fields": [{"name": f"f{i}", **kinds[i % 3]} for i in range(fields)]})


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()  # start each run without the previous run's garbage
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fields", default="1000,10000,100000",
                        help="comma-separated field counts")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(n) for n in args.fields.split(",")]

    rows = []
    for fields in sizes:
        text = schema_text(fields)
        ours = median_seconds(lambda t=text: parse_schema("AVRO", t), args.repeats)
        normalized = median_seconds(
            lambda t=text: parse_schema("AVRO", t, normalize=True).equivalence(), args.repeats)
        reference = median_seconds(lambda t=text: fastavro.parse_schema(json.loads(t)),
                                   args.repeats)
        rows.append((fields, len(text), ours, normalized, reference))

    base_per_field = rows[0][2] / rows[0][0]
    print(f"{'fields':>8} {'bytes':>10} {'registry s':>11} {'normalize s':>12} "
          f"{'fastavro s':>11} {'ratio':>7} {'us/field':>9} {'vs smallest':>12}")
    for fields, size, ours, normalized, reference in rows:
        per_field = ours / fields
        print(f"{fields:>8} {size:>10} {ours:>11.4f} {normalized:>12.4f} {reference:>11.4f} "
              f"{ours / reference:>7.1f} {per_field * 1e6:>9.2f} "
              f"{per_field / base_per_field:>12.2f}")


if __name__ == "__main__":
    main()
