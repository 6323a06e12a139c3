"""What ``GET /`` reports: Ferry's package version and the log's cluster id.

Kafka reports its own version and the id of the Kafka cluster the worker uses. Ferry
reports the installed ``ferryman`` distribution's version and the cluster id of the log
behind the backend: a ``kafka://`` cluster's id from its metadata, an ``embedded:``
directory's from the ``meta.properties`` a broker formatted it with. A log without one (an
embedded directory no broker has served) reports ``null``, never a made-up value.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

from core.backends import BackendError, LogBackend

__all__ = ["DISTRIBUTION", "log_cluster_id", "package_version"]

log = logging.getLogger(__name__)

DISTRIBUTION = "ferryman"


def package_version() -> str:
    """The installed version of Ferry (``unknown`` when run from an uninstalled tree)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def log_cluster_id(backend: LogBackend) -> str | None:
    """The cluster id of ``backend``'s log; a network backend that has not fetched
    metadata yet does so once."""
    cluster_id = getattr(backend, "cluster_id", None)
    if cluster_id is None and hasattr(backend, "cluster_id"):
        try:
            backend.list_topics()  # a metadata round trip fills in the cluster id
        except BackendError as exc:
            log.debug("cannot learn the cluster id of %s yet: %s", backend.url, exc)
            return None
        cluster_id = getattr(backend, "cluster_id", None)
    return str(cluster_id) if cluster_id else None
