"""The demo's processes, started in dependency order and stopped in reverse.

``DemoStack.start()`` runs PostgreSQL (with the ``shop`` database), ``moto_server`` (S3),
``osmem-server`` (the search server), the brokers, the Schema Registry and the Connect
workers, each a subprocess on free 127.0.0.1 ports, waiting for each to be ready (the
health endpoints the compose healthchecks use) before starting what needs it.
``start_pipeline()`` runs the Spark CDC pipeline (``ferry pipeline run``, a local session
in its own process group). ``close()`` stops everything it started; every child runs in
its own process group, which is SIGKILLed in the end, so nothing outlives the demo.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from core.cli.container import SERVICES, properties_to_env
from core.cli.demo import topology
from core.cli.demo.processes import (
    PASSWORD,
    Child,
    PostgresServer,
    free_port,
    start_moto,
    wait_listening,
)

__all__ = ["DemoStack"]

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 90.0
BUCKET = "ferry-demo"
DATABASE = "shop"


class DemoStack:
    def __init__(self, workdir: Path, *, brokers: int = 1, workers: int = 2,
                 say: Callable[[str], None] = lambda _line: None) -> None:
        self.workdir = workdir
        self.say = say
        self.nodes = [topology.Node(i + 1, "127.0.0.1", free_port(), free_port())
                      for i in range(brokers)]
        self.worker_count = workers
        self.children: list[Child] = []
        self.postgres: PostgresServer | None = None
        self.s3_url = self.search_url = self.registry_url = ""
        self.worker_urls: list[str] = []
        self.pipeline: Child | None = None
        self.checkpoint = workdir / "pipeline-checkpoint"

    @property
    def log_url(self) -> str:
        return "kafka://" + topology.bootstrap(self.nodes)

    @property
    def pg_dsn(self) -> str:
        assert self.postgres is not None
        return self.postgres.dsn(DATABASE)

    def addresses(self) -> dict[str, str]:
        """The local address of each compose service the connector files name."""
        assert self.postgres is not None
        return {"postgres": f"127.0.0.1:{self.postgres.port}",
                "minio": self.s3_url.removeprefix("http://"),
                "opensearch": self.search_url.removeprefix("http://")}

    def pids(self) -> list[int]:
        pids = [c.pid for c in self.children]
        if self.postgres is not None and self.postgres.proc is not None:
            pids.append(self.postgres.proc.pid)
        return pids

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        import psycopg

        self.postgres = PostgresServer()
        self.postgres.start()
        with psycopg.connect(self.postgres.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        self.say(f"postgres    127.0.0.1:{self.postgres.port} (database {DATABASE}, "
                 "wal_level=logical)")
        self._start_s3()
        self._start_search()
        self._start_brokers()
        self._start_registry()
        self._start_workers()

    def _child(self, name: str, argv: list[str], **kw) -> Child:
        child = Child(name, argv, self.workdir / f"{name}.log", cwd=self.workdir, **kw)
        self.children.append(child)
        return child

    def _ferry(self, name: str, *args: str) -> Child:
        env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
        return self._child(name, [sys.executable, "-m", "core.cli", *args], env=env)

    def _service(self, name: str, kind: str, props: dict[str, str], *args: str) -> Child:
        """``ferry container KIND ARGS`` with ``props`` as its FERRY_<KIND>_* variables:
        the container image's entry point, so a local service runs exactly as its compose
        counterpart does."""
        prefix = SERVICES[kind][0]
        env = {k: v for k, v in os.environ.items()
               if k != "FERRY_LOG" and not k.startswith(prefix)}
        env.update(properties_to_env(props, prefix))
        env["FERRY_CONFIG_DIR"] = str(self.workdir / name)
        return self._child(name, [sys.executable, "-m", "core.cli", "container", kind, *args],
                           env=env)

    def _start_s3(self) -> None:
        s3, self.s3_url = start_moto(self.workdir / "moto.log", READY_TIMEOUT_S)
        self.children.append(s3)
        self.s3_client().create_bucket(Bucket=BUCKET)
        self.say(f"s3          {self.s3_url} (moto_server, bucket {BUCKET})")

    def s3_client(self):
        import boto3
        import botocore.config

        return boto3.client("s3", endpoint_url=self.s3_url, region_name="us-east-1",
                            aws_access_key_id="ferry", aws_secret_access_key="ferry",
                            config=botocore.config.Config(s3={"addressing_style": "path"}))

    def _start_search(self) -> None:
        from osmem_server import resolve_binary

        port = free_port()
        # osmem-server stops when its stdin closes or its parent dies: both mean the demo
        # is gone.
        search = self._child("osmem", [resolve_binary(None), "--no-ja", "--addr",
                                       f"127.0.0.1:{port}", "--parent-pid", str(os.getpid())],
                             keep_stdin=True)
        wait_listening(port, search.alive, "osmem-server", READY_TIMEOUT_S)
        self.search_url = f"http://127.0.0.1:{port}"
        self.say(f"search      {self.search_url} (osmem-server, OpenSearch API)")

    def _start_brokers(self) -> None:
        for node in self.nodes:
            name = f"broker{node.node_id}"
            props = topology.broker_settings(node, self.nodes, str(self.workdir / name / "data"))
            child = self._service(name, "broker", props, "--metrics",
                                  f"127.0.0.1:{free_port()}")
            try:
                wait_listening(node.port, child.alive, child.name, READY_TIMEOUT_S)
            except RuntimeError as exc:
                last = child.output(1000).strip().splitlines()[-1:] or ["(no output)"]
                raise RuntimeError(f"{exc}: {last[0]}") from None
        self.say(f"brokers     {topology.bootstrap(self.nodes)} "
                 f"({len(self.nodes)} node{'s' if len(self.nodes) > 1 else ''})")

    def _start_registry(self) -> None:
        port = free_port()
        child = self._service("registry", "registry", topology.registry_settings(self.log_url),
                              "--listen", f"127.0.0.1:{port}")
        self.registry_url = f"http://127.0.0.1:{port}"
        self._wait_http(child, self.registry_url + "/subjects")
        self.say(f"registry    {self.registry_url}")

    def _start_workers(self) -> None:
        props = topology.worker_settings(self.log_url)
        workers = []
        for i in range(self.worker_count):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            workers.append((self._service(f"connect{i + 1}", "connect", props, "--rest",
                                          f"127.0.0.1:{port}", "--advertised-url", url), url))
        for child, url in workers:
            self._wait_http(child, url + "/health")
            self.worker_urls.append(url)
        self.say(f"connect     {', '.join(self.worker_urls)} (distributed, group "
                 f"{topology.CONNECT_GROUP})")

    def _wait_http(self, child: Child, url: str) -> None:
        import requests

        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if not child.alive():
                raise RuntimeError(f"{child.name} exited:\n{child.output()}")
            try:
                if requests.get(url, timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{child.name} not ready at {url} within "
                                   f"{READY_TIMEOUT_S:.0f} s:\n{child.output()}")
            time.sleep(0.2)

    def create_pipeline_topics(self) -> None:
        """The pipeline's output topics, compacted (latest state per key)."""
        from core.backends import open_backend
        from core.backends.errors import TopicExistsError

        with open_backend(self.log_url) as backend:
            for topic in (topology.STATE_TOPIC, topology.TOTALS_TOPIC):
                with contextlib.suppress(TopicExistsError):
                    backend.create_topic(topic, 1, {"cleanup.policy": "compact"})

    def start_pipeline(self) -> None:
        self.pipeline = self._ferry(
            "pipeline", "pipeline", "run", "cdc_order_totals", "--log", self.log_url,
            "--master", "local[2]", "--checkpoint", str(self.checkpoint),
            *topology.PIPELINE_ARGS)
        self.say(f"spark       cdc_order_totals on local[2] (checkpoint {self.checkpoint})")

    def micro_batches(self) -> int:
        """Micro-batches the pipeline's state query has committed."""
        commits = self.checkpoint / "state" / "commits"
        try:
            return sum(1 for p in commits.iterdir() if p.name.isdigit())
        except OSError:
            return 0

    def failed(self) -> Child | None:
        """A child that exited although the demo still runs, if any."""
        return next((c for c in self.children if not c.alive()), None)

    # ------------------------------------------------------------------ stop

    def close(self) -> None:
        for child in reversed(self.children):
            try:
                child.stop()
            except Exception:  # keep stopping the others
                log.exception("stopping %s", child.name)
        if self.postgres is not None:
            self.postgres.close()


__all__ += ["BUCKET", "DATABASE", "PASSWORD"]
