"""``ferry broker``: run one Kafka-protocol broker node on a data directory until stopped."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging
from core.cli.options import add_command, parse_key_values
from core.cluster.config import is_cluster_mode
from core.log.errors import StorageError

if TYPE_CHECKING:  # imported when the command runs: the other commands need no codec
    from core.broker.config import BrokerConfig
    from core.broker.server import Listener
    from core.cluster.config import ClusterConfig

__all__ = [
    "DEFAULT_LISTEN",
    "add_broker_config_options",
    "cluster_node_settings",
    "load_broker_config",
    "register",
    "resolve_listeners",
]

DEFAULT_LISTEN = "127.0.0.1:9092"
DEFAULT_DATA_DIR = "./ferry-data"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``broker``."""
    parser = add_command(subparsers, "broker",
                         "run a Kafka-protocol broker node until Ctrl-C or SIGTERM")
    parser.add_argument("--data-dir", metavar="DIR",
                        help=f"the data directory (default: log.dirs from --config, else "
                             f"{DEFAULT_DATA_DIR})")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help=f"where to accept clients (default: listeners from --config, "
                             f"else {DEFAULT_LISTEN})")
    parser.add_argument("--advertised-listener", metavar="HOST:PORT",
                        help="the address clients are told to use (default: --listen)")
    parser.add_argument("--metrics", metavar="HOST:PORT",
                        help="serve Prometheus /metrics and /health on this HTTP address "
                             "(default: off; ferry up uses 127.0.0.1:9404)")
    add_broker_config_options(parser, "--config", note=(
        "topics are created on first use only with auto.create.topics.enable=true, which is "
        "off here, unlike in Kafka and ferry up"))
    parser.set_defaults(func=_broker)


def add_broker_config_options(parser: argparse.ArgumentParser, file_flag: str,
                              defaults: dict[str, str] | None = None,
                              note: str = "") -> None:
    """``FILE_FLAG FILE`` (a server.properties or JSON object) and repeatable
    ``-o/--override KEY=VALUE`` (as kafka-server-start's ``--override``), which wins over
    the file. ``defaults`` are named in the help: they apply unless the file or an
    override sets the key; ``note`` is added to the file flag's help."""
    extra = f"; {note}" if note else ""
    if defaults:
        extra += " (this command's defaults: " + ", ".join(
            f"{k}={v}" for k, v in defaults.items()) + ")"
    parser.add_argument(file_flag, metavar="FILE", dest="broker_config",
                        help="broker settings with Kafka's names: a server.properties "
                             "file or a JSON object" + extra)
    parser.add_argument("-o", "--override", action="append", metavar="KEY=VALUE",
                        dest="broker_overrides",
                        help="one broker setting, over the file's (repeatable), e.g. "
                             "-o num.partitions=3")


def load_broker_config(args: argparse.Namespace,
                       defaults: dict[str, str] | None = None) -> BrokerConfig:
    """The BrokerConfig from ``defaults``, then the config file, then the overrides;
    ``CliError`` naming the file or the key for bad input. For a cluster node (the
    settings name process.roles) the cluster's keys are left to ClusterConfig, except
    ``node.id`` and ``min.insync.replicas`` (a topic default); ``raw`` keeps them all."""
    from dataclasses import replace

    from core.broker.config import BrokerConfig, BrokerConfigError, load_config_file
    from core.cluster.config import CLUSTER_KEYS

    overrides = parse_key_values(args.broker_overrides, "--override")
    settings: dict[str, object] = dict(defaults or {})
    try:
        if args.broker_config:
            settings.update(load_config_file(args.broker_config))
        settings.update(overrides)
        if is_cluster_mode(settings):
            left_out = CLUSTER_KEYS - {"node.id", "min.insync.replicas"} | {"broker.id",
                                                                             "log.dir"}
            config = BrokerConfig.parse({k: v for k, v in settings.items()
                                         if k not in left_out})
            return replace(config, raw=dict(settings))
        return BrokerConfig.parse(settings)
    except BrokerConfigError as exc:
        if exc.key is None:  # the file itself: the message names it
            raise CliError(str(exc)) from exc
        source = "--override" if exc.key in overrides else (
            f"broker config {args.broker_config}" if args.broker_config else "broker config")
        raise CliError(f"{source}: {exc}") from exc


def resolve_listeners(config: BrokerConfig, listen: str | None, advertised: str | None
                      ) -> tuple[Listener, Listener | None]:
    """Flags first, then ``listeners``/``advertised.listeners``, then the default."""
    from core.broker.server import parse_listener

    listener = parse_listener(listen or config.listeners or DEFAULT_LISTEN)
    text = advertised or config.advertised_listeners
    return listener, parse_listener(text, "--advertised-listener") if text else None


def _broker(args: argparse.Namespace) -> int:
    from core.broker.config import BrokerConfigError
    from core.broker.server import parse_listener, run_broker

    configure_server_logging()
    config = load_broker_config(args)
    if is_cluster_mode(config.raw):
        return _cluster_node(args, config)
    try:
        listen, advertised = resolve_listeners(config, args.listen, args.advertised_listener)
        data_dir = args.data_dir or config.log_dirs.split(",")[0].strip() or DEFAULT_DATA_DIR
        metrics = parse_listener(args.metrics, "--metrics") if args.metrics else None
        run_broker(config, Path(data_dir), listen, advertised, metrics)
    except (BrokerConfigError, StorageError) as exc:
        raise CliError(str(exc)) from exc
    return 0


def _cluster_node(args: argparse.Namespace, config: BrokerConfig) -> int:
    """The config names process.roles: run a cluster node (its listeners, data directory
    and quorum all come from the config; the single node's flags do not apply)."""
    from core.broker.config import BrokerConfigError
    from core.cli.cluster_broker import run_cluster_broker

    cluster, metrics = cluster_node_settings(args, config)
    try:
        run_cluster_broker(config, cluster, metrics)
    except (BrokerConfigError, StorageError) as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:
        raise CliError(f"cannot start the cluster node: {exc}") from exc
    return 0


def cluster_node_settings(args: argparse.Namespace, config: BrokerConfig
                          ) -> tuple[ClusterConfig, Listener | None]:
    """What ``ferry broker`` runs a cluster node with: its ClusterConfig and the
    ``--metrics`` address; CliError naming the flag or the key."""
    from core.broker.config import BrokerConfigError
    from core.broker.server import parse_listener
    from core.cluster.config import ClusterConfig, ClusterConfigError

    for flag, value in (("--listen", args.listen), ("--data-dir", args.data_dir),
                        ("--advertised-listener", args.advertised_listener)):
        if value:
            raise CliError(f"{flag} does not apply to a cluster node (process.roles is set): "
                           "use listeners, advertised.listeners and log.dirs in the config")
    try:
        cluster = ClusterConfig.parse(config.raw)
    except ClusterConfigError as exc:
        raise CliError(f"broker config {args.broker_config or ''}: {exc}".replace(
            "config : ", "config: ")) from exc
    try:
        metrics = parse_listener(args.metrics, "--metrics") if args.metrics else None
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
    return cluster, metrics
