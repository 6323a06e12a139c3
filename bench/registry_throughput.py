"""Requests/s of the Schema Registry: schema by id, lookup, and registrations.

Run from the repository root (a script, not a test):

    python3 bench/registry_throughput.py [--seconds 5] [--repeats 3] [--connections 8]
                                         [--processes 2] [--dir DIR]

The registry runs as ``ferry registry`` on an ``embedded:`` log in a subprocess (the
default 8 waitress threads). A load generator of ``--processes`` processes, together
holding ``--connections`` keep-alive HTTP/1.1 connections, each with one request in
flight, sends for ``--seconds`` per run (after a one-second warm-up) and counts 200
answers:

* **get by id**: ``GET /schemas/ids/{id}`` over 100 registered Avro schemas
* **lookup**: ``POST /subjects/{s}`` of those schemas under their subjects
* **register**: ``POST /subjects/{s}/versions`` of a new schema under a new subject, so
  every request appends to ``_schemas`` and waits until the registry has read it back

The reference, measured in the same run, is the same stack (Flask under waitress, 8
threads, same load generator) answering ``GET /ping`` with a constant JSON body: the
ceiling any endpoint of this stack can reach on the machine. The client is a raw-socket
HTTP/1.1 client of a few microseconds per request, so the figures are the server's; CPU
of the server and of the client side is reported per run. Medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _cpu_accounting import Timed, timed  # noqa: E402
from _servers import ServerProcess  # noqa: E402

SCHEMAS = 100
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class FerryRegistry(ServerProcess):
    """``python -m core.cli --log embedded:DIR registry --listen ADDR``."""

    name = "ferry registry"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "core.cli", "--log", f"embedded:{self.data_dir}",
                "registry", "--listen", self.address]


class ReferenceServer(ServerProcess):
    """The same Flask + waitress stack with one trivial endpoint."""

    name = "reference flask/waitress"

    def argv(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--serve-reference",
                str(self.port)]


def serve_reference(port: int) -> None:
    from flask import Flask, jsonify
    from waitress import serve

    app = Flask("reference")

    @app.get("/ping")
    def ping():  # type: ignore[no-untyped-def]
        return jsonify({"ok": True})

    serve(app, host="127.0.0.1", port=port, threads=8, ident="reference", _quiet=True)


# -- the load generator --------------------------------------------------------------------


def _request(method: str, path: str, body: object | None = None) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\n"
    if body is not None:
        head += f"Content-Type: {CONTENT_TYPE}\r\nContent-Length: {len(data)}\r\n"
    return (head + "\r\n").encode() + data


class _Connection:
    """One keep-alive connection, one request in flight."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def call(self, request: bytes) -> int:
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buffer += chunk
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            rest += chunk
        self.buffer = rest[length:]
        return status


def _avro(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"},
                                  {"name": "payload", "type": "string"}]})


def _requests(workload: str, worker: int, ids: list[int]) -> Callable[[int], bytes]:
    if workload == "reference":
        ping = _request("GET", "/ping")
        return lambda n: ping
    if workload == "get":
        by_id = [_request("GET", f"/schemas/ids/{i}") for i in ids]
        return lambda n: by_id[n % len(by_id)]
    if workload == "lookup":
        lookups = [_request("POST", f"/subjects/bench-{i}-value", {"schema": _avro(f"S{i}")})
                   for i in range(len(ids))]
        return lambda n: lookups[n % len(lookups)]
    stamp = f"{worker}_{time.monotonic_ns()}"
    return lambda n: _request("POST", f"/subjects/new-{stamp}-{n}-value/versions",
                              {"schema": _avro(f"N{stamp}_{n}")})


def _load(port: int, workload: str, threads: int, seconds: float, worker_index: int,
          ids: list[int], out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    counts = [0] * threads
    errors = [0] * threads
    start_at = time.monotonic() + 1.0  # warm-up: requests before this are not counted
    stop_at = start_at + seconds

    def run(slot: int) -> None:
        connection = _Connection(port)
        build = _requests(workload, worker_index * threads + slot, ids)
        n = 0
        while True:
            now = time.monotonic()
            if now >= stop_at:
                break
            status = connection.call(build(n))
            n += 1
            if now >= start_at:
                if status == 200:
                    counts[slot] += 1
                else:
                    errors[slot] += 1

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    out.put((sum(counts), sum(errors)))


def drive(port: int, workload: str, *, seconds: float, connections: int, processes: int,
          ids: list[int]) -> tuple[float, int]:
    """Requests/s answered 200 over ``seconds``, and the number of other answers."""
    out: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    per_process = [connections // processes + (1 if i < connections % processes else 0)
                   for i in range(processes)]
    workers = [multiprocessing.Process(target=_load, args=(port, workload, threads, seconds,
                                                           i, ids, out))
               for i, threads in enumerate(per_process) if threads]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join(60)
    return sum(r[0] for r in results) / seconds, sum(r[1] for r in results)


def _post_json(port: int, path: str, body: object) -> dict:  # type: ignore[type-arg]
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": CONTENT_TYPE})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def _wait_ready(port: int, timeout: float = 60.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/subjects", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError("the registry did not become ready")


def _line(label: str, runs: list[tuple[float, int, Timed]]) -> str:
    rates = [r[0] for r in runs]
    errors = sum(r[1] for r in runs)
    server = statistics.median(r[2].server_cpu for r in runs)
    client = statistics.median(r[2].client_cpu for r in runs)
    other = statistics.median(r[2].other_cpu for r in runs)
    return (f"{label:<22} {statistics.median(rates):>9,.0f} req/s   (runs: "
            f"{', '.join(f'{r:,.0f}' for r in rates)}; server CPU {server:.2f}, "
            f"client CPU {client:.2f}, other {other:.2f} cores; non-200: {errors})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the registry's log goes (default: a temporary dir)")
    parser.add_argument("--serve-reference", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_reference is not None:
        serve_reference(args.serve_reference)
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        options = {"seconds": args.seconds, "connections": args.connections,
                   "processes": args.processes}
        print(f"{args.connections} connections from {args.processes} client processes, "
              f"{args.seconds:g} s per run, {args.repeats} runs; median req/s")
        with ReferenceServer(base / "reference") as reference:
            runs = []
            for _ in range(args.repeats):
                holder: dict[str, tuple[float, int]] = {}

                def run(port: int = reference.port, h: dict = holder) -> float:  # type: ignore[type-arg]
                    h["r"] = drive(port, "reference", ids=[], **options)
                    return args.seconds

                t = timed(reference.pid, run)
                runs.append((*holder["r"], t))
            print(_line("reference GET /ping", runs))
        with FerryRegistry(base / "registry") as registry:
            _wait_ready(registry.port)
            ids = [_post_json(registry.port, f"/subjects/bench-{i}-value/versions",
                              {"schema": _avro(f"S{i}")})["id"] for i in range(SCHEMAS)]
            for workload, label in [("get", "GET /schemas/ids/{id}"),
                                    ("lookup", "POST /subjects/{s}"),
                                    ("register", "register (new subject)")]:
                runs = []
                for _ in range(args.repeats):
                    holder = {}

                    def run(port: int = registry.port, h: dict = holder,  # type: ignore[type-arg]
                            w: str = workload) -> float:
                        h["r"] = drive(port, w, ids=ids, **options)
                        return args.seconds

                    t = timed(registry.pid, run)
                    runs.append((*holder["r"], t))
                print(_line(label, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
