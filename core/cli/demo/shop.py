"""The demo's shop database: its schema, seed data and a load generator.

Orders are placed (insert), paid and shipped (updates of ``status``) or cancelled (an
update to ``cancelled``); now and then a product's price or a customer's city changes.
An order's ``amount`` never changes after it is placed, so the per-customer totals the
pipeline computes (counted when an order is placed) can be checked against the table.
Every change is one autocommitted statement and is recorded in ``changes`` as
``(table, op, id)`` with Debezium's op letters, which is what ``demo.verify`` expects to
find in S3.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["SCHEMA_SQL", "LoadGenerator", "Seeded", "seed"]

SCHEMA_SQL = """
CREATE TABLE customers (
    id serial PRIMARY KEY,
    name text NOT NULL,
    email text NOT NULL UNIQUE,
    city text NOT NULL
);
CREATE TABLE products (
    id serial PRIMARY KEY,
    name text NOT NULL,
    price numeric(10, 2) NOT NULL
);
CREATE TABLE orders (
    id serial PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers (id),
    product_id int NOT NULL REFERENCES products (id),
    quantity int NOT NULL,
    amount numeric(10, 2) NOT NULL,
    status text NOT NULL DEFAULT 'placed',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""

_CITIES = ["Oslo", "Lisbon", "Tallinn", "Porto", "Bergen", "Tartu", "Malmo", "Gdansk"]
_PRODUCTS = ["kayak", "paddle", "life vest", "dry bag", "rope", "anchor", "compass",
             "lantern", "oar lock", "bilge pump", "fender", "cleat"]
#: status -> what an update moves it to
_NEXT = {"placed": "paid", "paid": "shipped"}


@dataclass
class Seeded:
    customers: list[int]
    products: list[int]
    orders: list[int]


def seed(conn, rng: random.Random, customers: int = 20, products: int = 12,
         orders: int = 40) -> Seeded:
    """Create the schema and its first rows (``conn`` autocommits)."""
    conn.execute(SCHEMA_SQL)
    cust = [conn.execute(
        "INSERT INTO customers (name, email, city) VALUES (%s, %s, %s) RETURNING id",
        (f"customer {i}", f"customer{i}@example.com", rng.choice(_CITIES))).fetchone()[0]
        for i in range(1, customers + 1)]
    prod = [conn.execute(
        "INSERT INTO products (name, price) VALUES (%s, %s) RETURNING id",
        (_PRODUCTS[i % len(_PRODUCTS)] + (f" {i // len(_PRODUCTS) + 1}" if i >= 12 else ""),
         round(rng.uniform(5, 400), 2))).fetchone()[0] for i in range(products)]
    placed = [_place(conn, rng, cust, prod) for _ in range(orders)]
    return Seeded(cust, prod, placed)


def _place(conn, rng: random.Random, customers: list[int], products: list[int]) -> int:
    qty = rng.randint(1, 4)
    return conn.execute(
        "INSERT INTO orders (customer_id, product_id, quantity, amount) "
        "SELECT %s, id, %s, price * %s FROM products WHERE id = %s RETURNING id",
        (rng.choice(customers), qty, qty, rng.choice(products))).fetchone()[0]


@dataclass
class LoadGenerator:
    """Changes at about ``rate`` per second on its own thread until ``stop()``."""

    dsn: str
    seeded: Seeded
    rate: float = 20.0
    seed: int = 1
    changes: list[tuple[str, str, int]] = field(default_factory=list)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="demo-load", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def counts(self) -> Counter[tuple[str, str]]:
        """Changes so far by (table, op)."""
        with self._lock:
            return Counter((table, op) for table, op, _ in self.changes)

    def _record(self, table: str, op: str, key: int) -> None:
        with self._lock:
            self.changes.append((table, op, key))

    def _run(self) -> None:
        import psycopg

        rng = random.Random(self.seed)
        s = self.seeded
        open_orders = {i: "placed" for i in s.orders}
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self._stop.is_set():
                    self._step(conn, rng, open_orders)
                    self._stop.wait(1.0 / self.rate)
        except BaseException as exc:  # reported by the view and the check
            self.error = exc

    def _step(self, conn, rng: random.Random, open_orders: dict[int, str]) -> None:
        s = self.seeded
        roll = rng.random()
        if roll < 0.45 or not open_orders:
            order = _place(conn, rng, s.customers, s.products)
            open_orders[order] = "placed"
            self._record("orders", "c", order)
        elif roll < 0.80:
            order = rng.choice(list(open_orders))
            status = _NEXT[open_orders[order]]
            self._set_status(conn, order, status)
            if status == "shipped":
                del open_orders[order]
            else:
                open_orders[order] = status
        elif roll < 0.92:
            order = rng.choice(list(open_orders))
            self._set_status(conn, order, "cancelled")
            del open_orders[order]
        elif roll < 0.96:
            product = rng.choice(s.products)
            conn.execute("UPDATE products SET price = round(price * %s::numeric, 2) WHERE id = %s",
                         (rng.choice([0.9, 1.1]), product))
            self._record("products", "u", product)
        else:
            customer = rng.choice(s.customers)
            conn.execute("UPDATE customers SET city = %s WHERE id = %s",
                         (rng.choice(_CITIES), customer))
            self._record("customers", "u", customer)

    def _set_status(self, conn, order: int, status: str) -> None:
        conn.execute("UPDATE orders SET status = %s, updated_at = now() WHERE id = %s",
                     (status, order))
        self._record("orders", "u", order)




def existing(conn) -> Seeded | None:
    """The ids of a shop seeded before (a restarted load generator), None if none."""
    if conn.execute("SELECT to_regclass('public.orders')").fetchone()[0] is None:
        return None
    ids = [[r[0] for r in conn.execute(query).fetchall()] for query in (
        "SELECT id FROM customers ORDER BY id", "SELECT id FROM products ORDER BY id",
        # only orders still open: the generator moves them on from 'placed'
        "SELECT id FROM orders WHERE status = 'placed' ORDER BY id")]
    return Seeded(*ids)


def main(argv: list[str] | None = None) -> int:
    """``python -m demo.shop --dsn DSN``: seed the shop unless it is there, then make
    changes until SIGTERM or Ctrl-C (the compose stack's load generator)."""
    import argparse
    import logging
    import signal

    import psycopg

    parser = argparse.ArgumentParser(prog="python -m demo.shop", description=main.__doc__)
    parser.add_argument("--dsn", required=True, help="a libpq connection string")
    parser.add_argument("--rate", type=float, default=5.0, help="changes per second")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger("core.cli.demo.shop")
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        seeded = existing(conn) or seed(conn, random.Random(args.seed))
    log.info("shop has %d customers, %d products, %d orders; %.3g changes/s",
             len(seeded.customers), len(seeded.products), len(seeded.orders), args.rate)
    load = LoadGenerator(args.dsn, seeded, rate=args.rate, seed=args.seed)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    load.start()
    while not stop.wait(10) and load.error is None:
        log.info("%d changes so far", len(load.changes))
    load.stop()
    if load.error is not None:
        log.error("the load generator failed: %s", load.error)
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
