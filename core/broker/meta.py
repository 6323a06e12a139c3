"""``DATA_DIR/meta.properties``: the cluster id and node id a data directory belongs to.

Kafka writes the same file (``version``, ``cluster.id``, ``node.id``) when a log directory
is formatted, and refuses to start a broker whose node id differs from the stored one;
Ferry does the same, generating the cluster id on first start. Files here are replaced
atomically: write a temporary file, fsync, rename, fsync the directory.
"""

from __future__ import annotations

import base64
import logging
import os
import uuid
from pathlib import Path

from core.broker.config import BrokerConfigError, parse_properties

__all__ = ["META_FILE", "load_or_create_meta", "new_cluster_id", "write_atomically"]

log = logging.getLogger(__name__)

META_FILE = "meta.properties"


def new_cluster_id() -> str:
    """A random id in Kafka's Uuid form: 22 characters of URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves the old or the new content;
    a new file gets ``mode``."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load_or_create_meta(data_dir: Path, node_id: int) -> str:
    """The cluster id of ``data_dir``, written with ``node_id`` on first use.

    Raises BrokerConfigError if the directory belongs to another node id, or if the file
    is unreadable (the directory may hold another cluster's data: a person must decide).
    """
    path = data_dir / META_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        cluster_id = new_cluster_id()
        write_atomically(path, f"#Written by ferry broker\nversion=1\ncluster.id={cluster_id}\n"
                               f"node.id={node_id}\n")
        log.info("formatted %s: cluster id %s, node id %d", data_dir, cluster_id, node_id)
        return cluster_id
    except (OSError, UnicodeDecodeError) as exc:
        raise BrokerConfigError(f"cannot read {path}: {exc}") from None
    props = parse_properties(text)
    cluster_id = props.get("cluster.id", "")
    stored = props.get("node.id", "")
    if not cluster_id or not stored.lstrip("-").isdigit():
        raise BrokerConfigError(
            f"{path} has no valid cluster.id and node.id; restore it or remove it to give the "
            "directory a new cluster id")
    if int(stored) != node_id:
        raise BrokerConfigError(
            f"the data directory {data_dir} belongs to node {stored} (see {path}), but this "
            f"broker is configured with node.id={node_id}", key="node.id")
    return cluster_id
