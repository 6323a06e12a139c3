"""Produce and consume throughput over TLS and SASL_SSL against PLAINTEXT, same broker, same run.

Run from the repository root:

    python3 bench/security_throughput.py [--messages 200000] [--repeats 3] [--json]

One ``ferry broker`` serves three listeners: PLAINTEXT, SSL (TLS 1.3, server certificate
only) and SASL_SSL (SCRAM-SHA-512 over TLS), with certificates made for the run by
``tests/certificates.py`` (the ``cryptography`` package). For each repeat, and for each
listener in a rotating order, confluent-kafka (librdkafka) produces ``--messages`` 1 KiB
values with acks=1 to a fresh one-partition topic (``produce_batch``, then ``flush()``;
connection, TLS handshake and SASL login happen before the clock starts) and then
consumes them from the log start (see ``_kafka_clients.py``). The table gives the median
messages/s and MB/s per listener and the median of the per-repeat ratios against the
PLAINTEXT run of the same repeat, by wall time and by CPU (broker plus client CPU seconds
of PLAINTEXT over this listener's: the ratio on a machine with no other load). "other
load" is the CPU every other process used meanwhile (see ``_cpu_accounting.py``): above a
few tenths of a core the wall-time ratios are noise; "broker µs/msg" (the broker's own
CPU per record) is the steadiest figure under load. Last, ``tls_record_cost`` measures what
reading a TLS record costs the broker's SSL context at librdkafka's produce record size and
at the 16 KiB maximum. With ``--record-sizes``, one more produce run of ``--messages``
goes through a relay that counts the TLS records the client sends (``_tls_records.py``) to
a broker of its own, and the table of the commonest record sizes comes with what reading
each size costs the broker per message. The issue's target: >= 60% of PLAINTEXT for 1 KiB.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import _kafka_clients as kafka
from _cpu_accounting import Timed, timed
from _servers import REPO_ROOT, FerryBroker, free_port
from _tls_records import TlsRecordTally

sys.path.insert(0, str(REPO_ROOT / "tests"))
from certificates import make_certificates  # the tests' certificate maker

log = logging.getLogger("bench.security_throughput")

VALUE_SIZE = 1024
# The TLS records librdkafka sends produce requests in average ~2.2 KB (about 47,000 records
# for 100,000 1 KiB values): see --record-sizes for what they are. A full record holds 16 KiB.
PRODUCE_RECORD_SIZE = 2200
MAX_RECORD_SIZE = 16384
# What TLS 1.3 adds to a record's plaintext: the content type byte and the 16-byte AEAD tag.
TLS13_RECORD_OVERHEAD = 17
MB = 1_000_000
USER, PASSWORD = "bench", "bench-secret"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--record-sizes", action="store_true",
                        help="also count the TLS records of one produce run")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    values = [bytes([65 + i % 26]) * VALUE_SIZE for i in range(1024)]
    results: dict[str, list[tuple[Timed, Timed]]] = {}
    with tempfile.TemporaryDirectory(prefix="ferry-security-bench-") as tmp:
        root = Path(tmp)
        certs = make_certificates(root)
        ssl_port, sasl_port = free_port(), free_port()
        config = {
            "listeners": f"PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port},"
                         f"SASL_SSL://127.0.0.1:{sasl_port}",
            "ssl.keystore.location": str(certs.server),
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        }
        with FerryBroker(root / "data", config) as broker:
            plaintext = broker.address
            _add_scram_user(plaintext)
            tls = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}
            listeners = {
                "PLAINTEXT": (plaintext, {}),
                "SSL": (f"127.0.0.1:{ssl_port}", tls),
                "SASL_SSL": (f"127.0.0.1:{sasl_port}", {
                    **tls, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": USER, "sasl.password": PASSWORD}),
            }
            names = list(listeners)
            for repeat in range(args.repeats):
                order = names[repeat % 3:] + names[:repeat % 3]
                for name in order:
                    bootstrap, security = listeners[name]
                    topic = f"bench-{name.lower()}-{uuid.uuid4().hex[:6]}"
                    kafka.create_topic(plaintext, topic, 1)
                    produced = timed(broker.pid, lambda b=bootstrap, t=topic, s=security:
                                     kafka.confluent_produce(b, t, 1, values, args.messages,
                                                             "1", s))
                    consumed = timed(broker.pid, lambda b=bootstrap, t=topic, s=security:
                                     kafka.confluent_consume(b, t, 1, args.messages,
                                                             VALUE_SIZE, s))
                    results.setdefault(name, []).append((produced, consumed))
                    log.info("repeat %d %-9s produce %8.0f msg/s  consume %8.0f msg/s  "
                             "other load %.2f/%.2f cores", repeat + 1, name,
                             args.messages / produced.seconds,
                             args.messages / consumed.seconds, produced.other_cpu,
                             consumed.other_cpu)
                    kafka.delete_topic(plaintext, topic)
        record_cost = tls_record_cost(certs.server, certs.ca)
        tally = (produce_record_sizes(root, certs, values, args.messages)
                 if args.record_sizes else None)
    report = _report(results, args.messages)
    report["tls_record_read_us_per_kib"] = record_cost
    if tally is not None:
        report["produce_tls_records"] = tally
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _print_table(report, args)
    return 0


def tls_record_cost(keystore: Path, ca: Path, kib: int = 20_000,
                    sizes: tuple[int, ...] = (PRODUCE_RECORD_SIZE, MAX_RECORD_SIZE)
                    ) -> dict[int, float]:
    """CPU microseconds per KiB of plaintext that reading TLS records of each size costs
    the broker's SSL context: ``SSLObject.read`` into a buffer over memory BIOs, as asyncio's
    SSL transport does. The best of three runs of ``kib`` KiB, in this thread's CPU time."""
    import contextlib
    import ssl
    import time

    from core.broker.security.tls import TlsContext

    server_context = TlsContext({"ssl.keystore.location": str(keystore)}, "SSL").context
    client_context = ssl.create_default_context(cafile=str(ca))
    client_context.check_hostname = False
    cost = {}
    for size in sizes:
        to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
        server = server_context.wrap_bio(to_server, to_client, server_side=True)
        client = client_context.wrap_bio(to_client, to_server)
        for _ in range(10):  # the handshake, one flight at a time
            for side in (client, server):
                with contextlib.suppress(ssl.SSLWantReadError):
                    side.do_handshake()
        payload, records = b"x" * size, kib * 1024 // size
        into = memoryview(bytearray(256 * 1024))
        best = float("inf")
        for _ in range(3):
            for _ in range(records):
                client.write(payload)  # one TLS record each (size <= 16 KiB)
            start, filled = time.thread_time(), 0
            with contextlib.suppress(ssl.SSLWantReadError):
                while True:
                    filled += server.read(len(into) - filled, into[filled:])
                    if filled > len(into) - MAX_RECORD_SIZE:
                        filled = 0
            best = min(best, (time.thread_time() - start) / (records * size / 1024) * 1e6)
        cost[size] = best
    return cost


def produce_record_sizes(root: Path, certs: object, values: list[bytes], messages: int
                         ) -> dict:
    """The TLS records of one SSL produce run of ``messages`` values, counted by a relay
    (see ``_tls_records.py``) in front of a broker of its own: the five commonest sizes
    (ciphertext bytes), each with its count and what reading one costs the broker's SSL
    context (``tls_record_cost``), and the read CPU per message they add up to."""
    ssl_port, relay_port = free_port(), free_port()
    broker = FerryBroker(root / "tally", {
        "ssl.keystore.location": str(certs.server)})  # type: ignore[attr-defined]
    broker.config.update({
        "listeners": f"PLAINTEXT://{broker.address},SSL://127.0.0.1:{ssl_port}",
        "advertised.listeners": f"PLAINTEXT://{broker.address},SSL://127.0.0.1:{relay_port}"})
    tls = {"security.protocol": "SSL",
           "ssl.ca.location": str(certs.ca)}  # type: ignore[attr-defined]
    with broker, TlsRecordTally(relay_port, ("127.0.0.1", ssl_port)) as relay:
        topic = f"bench-tally-{uuid.uuid4().hex[:6]}"
        kafka.create_topic(broker.address, topic, 1)
        kafka.confluent_produce(f"127.0.0.1:{relay_port}", topic, 1, values, messages, "1",
                                tls)
        sizes = relay.sizes.copy()
    common = sizes.most_common(5)
    plaintext = {size: max(1, size - TLS13_RECORD_OVERHEAD) for size, _ in common}
    per_kib = tls_record_cost(certs.server, certs.ca, kib=5_000,  # type: ignore[attr-defined]
                              sizes=tuple(sorted({*plaintext.values(), MAX_RECORD_SIZE})))
    per_record = {size: per_kib[plain] * plain / 1024 for size, plain in plaintext.items()}
    total_bytes = sum(size * count for size, count in sizes.items())
    full_records = total_bytes / (MAX_RECORD_SIZE + TLS13_RECORD_OVERHEAD)
    return {
        "records": sum(sizes.values()),
        "average_bytes": total_bytes / max(1, sum(sizes.values())),
        "common": [{"bytes": size, "count": count, "read_us": per_record[size]}
                   for size, count in common],
        # the commonest sizes only: a lower bound of the whole run's read cost
        "read_us_per_message": sum(per_record[size] * count for size, count in common)
        / messages,
        "read_us_per_message_if_full": full_records * per_kib[MAX_RECORD_SIZE]
        * MAX_RECORD_SIZE / 1024 / messages,
    }


def _add_scram_user(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode())])
    for future in futures.values():
        future.result(30)


def _cpu_s(t: Timed) -> float:
    """CPU seconds the broker and the client used together during one timed section."""
    return (t.server_cpu + t.client_cpu) * t.window_s


def _broker_us(t: Timed, messages: int) -> float:
    """The broker's CPU microseconds per record during one timed section."""
    return t.server_cpu * t.window_s / messages * 1e6


def _client_us(t: Timed, messages: int) -> float:
    """The client's CPU microseconds per record (librdkafka's threads and the Python
    driver) during one timed section."""
    return t.client_cpu * t.window_s / messages * 1e6


def _report(results: dict[str, list[tuple[Timed, Timed]]], messages: int) -> dict:
    base = results["PLAINTEXT"]
    report = {}
    for name, runs in results.items():
        pairs = list(zip(runs, base, strict=True))
        report[name] = {
            "produce_msgs_s": statistics.median(messages / p.seconds for p, _ in runs),
            "consume_msgs_s": statistics.median(messages / c.seconds for _, c in runs),
            # per repeat: this listener's throughput over PLAINTEXT's in the same repeat
            "produce_ratio": statistics.median(b[0].seconds / r[0].seconds for r, b in pairs),
            "consume_ratio": statistics.median(b[1].seconds / r[1].seconds for r, b in pairs),
            # the same from CPU used (broker + client): what the ratio is on a machine with
            # no other load, where throughput is bounded by these two processes' CPU
            "produce_cpu_ratio": statistics.median(_cpu_s(b[0]) / _cpu_s(r[0])
                                                   for r, b in pairs),
            "consume_cpu_ratio": statistics.median(_cpu_s(b[1]) / _cpu_s(r[1])
                                                   for r, b in pairs),
            # the broker's own CPU per record: what the listener's transport costs it
            "produce_broker_us": statistics.median(_broker_us(p, messages) for p, _ in runs),
            "consume_broker_us": statistics.median(_broker_us(c, messages) for _, c in runs),
            "produce_client_us": statistics.median(_client_us(p, messages) for p, _ in runs),
            "consume_client_us": statistics.median(_client_us(c, messages) for _, c in runs),
            "other_cpu": statistics.median(max(p.other_cpu, c.other_cpu) for p, c in runs),
        }
    return report


def _print_table(report: dict, args: argparse.Namespace) -> None:
    print(f"\n{args.messages} messages of {VALUE_SIZE} B, {args.repeats} repeats, medians\n")
    cost = report.pop("tls_record_read_us_per_kib")
    tally = report.pop("produce_tls_records", None)
    print("| listener | produce msg/s | MB/s | vs PLAINTEXT | by CPU | broker µs/msg | "
          "client µs/msg | consume msg/s | MB/s | vs PLAINTEXT | by CPU | broker µs/msg | "
          "client µs/msg | other load (cores) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in report.items():
        print(f"| {name} | {r['produce_msgs_s']:,.0f} | "
              f"{r['produce_msgs_s'] * VALUE_SIZE / MB:,.1f} | {r['produce_ratio']:.0%} | "
              f"{r['produce_cpu_ratio']:.0%} | {r['produce_broker_us']:.1f} | "
              f"{r['produce_client_us']:.1f} | {r['consume_msgs_s']:,.0f} | "
              f"{r['consume_msgs_s'] * VALUE_SIZE / MB:,.1f} | {r['consume_ratio']:.0%} | "
              f"{r['consume_cpu_ratio']:.0%} | {r['consume_broker_us']:.1f} | "
              f"{r['consume_client_us']:.1f} | {r['other_cpu']:.2f} |")
    print("\nReading TLS records with the broker's SSL context (CPU µs per KiB): " + ", ".join(
        f"{size:,} B records {us:.2f}" for size, us in cost.items()))
    if tally is not None:
        print(f"\nTLS records of one SSL produce run: {tally['records']:,}, "
              f"{tally['average_bytes']:,.0f} B on average; the commonest:")
        for row in tally["common"]:
            print(f"  {row['bytes']:>6,} B  x {row['count']:>7,}  "
                  f"read {row['read_us']:.2f} µs each")
        print(f"  reading them: {tally['read_us_per_message']:.2f} µs per message "
              f"(full 16 KiB records would take {tally['read_us_per_message_if_full']:.2f})")


if __name__ == "__main__":
    sys.exit(main())
