"""The connector files of ``docker/connectors/``, as the compose stack POSTs them, and
their local form: the compose service addresses they name (``postgres:5432``,
``http://minio:9000``, ``http://opensearch:9200``) replaced by the local servers'."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["COMPOSE_ADDRESSES", "CONNECTOR_FILES", "default_dir", "load", "localize", "post"]

#: The order the init step POSTs them: the source first, so its topics exist.
CONNECTOR_FILES = ("shop-cdc.json", "s3-raw-changes.json", "opensearch-orders.json",
                   "jdbc-order-totals.json")
#: compose service -> the address the connector files use for it
COMPOSE_ADDRESSES = {"postgres": "postgres:5432", "minio": "minio:9000",
                     "opensearch": "opensearch:9200"}
#: the PostgreSQL password of the compose stack (its POSTGRES_PASSWORD)
COMPOSE_PG_PASSWORD = "ferry-demo"


def default_dir() -> Path:
    """``docker/connectors`` of the source tree this package runs from (an editable
    install), else of the current directory (a checkout installed with ``pip install .``,
    as the README does)."""
    source_tree = Path(__file__).resolve().parents[3] / "docker" / "connectors"
    if source_tree.is_dir():
        return source_tree
    return Path.cwd() / "docker" / "connectors"


def load(directory: Path) -> list[dict[str, Any]]:
    """The connector files in POST order; FileNotFoundError names a missing one."""
    out = []
    for name in CONNECTOR_FILES:
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"connector file {path} is missing (the demo reads "
                                    "docker/connectors of a source checkout; see "
                                    "--connectors)")
        out.append(json.loads(path.read_text()))
    return out


def localize(connector: Mapping[str, Any], addresses: Mapping[str, str],
             pg_password: str) -> dict[str, Any]:
    """``connector`` with every compose address replaced by ``addresses[service]``
    (``host:port``) and the compose PostgreSQL password by ``pg_password``."""
    config = dict(connector["config"])
    for key, value in config.items():
        for service, address in COMPOSE_ADDRESSES.items():
            value = value.replace(address, addresses[service])
        config[key] = value
    if config.get("database.hostname") == "postgres":
        host, _, port = addresses["postgres"].rpartition(":")
        config["database.hostname"], config["database.port"] = host, port
    for key in ("database.password", "connection.password"):
        if config.get(key) == COMPOSE_PG_PASSWORD:
            config[key] = pg_password
    return {"name": connector["name"], "config": config}


def post(worker_url: str, connector: Mapping[str, Any], timeout: float = 60.0) -> None:
    """POST /connectors; retried while the worker cluster is rebalancing (409) or its
    leader is not known yet; RuntimeError with the worker's answer otherwise."""
    import requests

    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = requests.post(f"{worker_url}/connectors", json=connector, timeout=30)
        except requests.RequestException as exc:
            answer, error = None, str(exc)
        else:
            if answer.status_code in (200, 201):
                return
            error = f"{answer.status_code} {answer.text.strip()}"
            if answer.status_code == 409 and "already exists" in answer.text:
                return
            if answer.status_code not in (409, 500, 503):
                raise RuntimeError(f"POST {connector['name']}: {error}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"POST {connector['name']}: {error}")
        time.sleep(0.5)
