"""Run a cluster node's metadata service alone: ``python -m core.cli.cluster_node --config
FILE``. The file has Kafka's KRaft settings (``process.roles``, ``node.id``,
``controller.quorum.voters``, ``listeners``, ``controller.listener.names``, ``log.dirs``).

This is the step before ``ferry broker`` runs cluster nodes: it runs the metadata quorum
and this node's broker lease, with no Kafka listener, so the quorum can be tried and tested
across real processes. A bad setting is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from core.broker.config import BrokerConfigError, load_config_file
from core.broker.security.metadata_control import security_operation
from core.cli.errors import CliError
from core.cli.options import parse_key_values
from core.cluster.config import ClusterConfig, ClusterConfigError
from core.cluster.observer import MetadataObserver
from core.cluster.raft.storage import RaftStorageError
from core.cluster.service import ClusterService

__all__ = ["main"]

log = logging.getLogger("ferry.cluster")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.cli.cluster_node")
    parser.add_argument("--config", required=True, metavar="FILE")
    parser.add_argument("-o", "--override", action="append", metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_config_file(args.config)
        settings.update(parse_key_values(args.override, "--override"))
        config = ClusterConfig.parse(settings)
        asyncio.run(_run(config))
    except (BrokerConfigError, ClusterConfigError, CliError, RaftStorageError, ValueError) as exc:
        print(f"cluster node: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"cluster node: error: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


async def _run(config: ClusterConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    service: ClusterService | MetadataObserver = (
        ClusterService(config, operations=security_operation) if config.voters
        else MetadataObserver(config))
    await service.start()
    try:
        await stop.wait()
    finally:
        await service.stop()
        log.info("node %d stopped", config.node_id)


if __name__ == "__main__":
    sys.exit(main())
