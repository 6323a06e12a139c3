"""Which broker config names Kafka lets AlterConfigs change while the broker runs.

Kafka's ``DynamicBrokerConfig.AllDynamicConfigs``: the broker-level topic defaults, the log
cleaner's and thread pools' sizes, connection limits, producer-state expiry, metrics
reporters, and listener, SASL and SSL settings (those only per broker, not as a
cluster-wide default; SSL key and trust stores only per listener,
``listener.name.NAME.ssl...``). Any other Kafka config is read-only: Kafka answers
INVALID_REQUEST "Cannot update these configs dynamically". Ferry accepts the same names so
that tools and test suites written for Kafka work; ``core.broker.dynamic_config`` stores
them and applies the ones Ferry reads.
"""

from __future__ import annotations

import re

from core.log.config import BROKER_DEFAULT_NAMES

__all__ = ["DYNAMIC_CONFIGS", "LISTENER_PREFIXED", "LIST_CONFIGS", "PER_BROKER_ONLY",
           "PER_LISTENER_ONLY", "VALUE_TYPES", "is_sensitive"]

#: SslConfigs.RECONFIGURABLE_CONFIGS: key and trust stores, changed per listener only.
PER_LISTENER_ONLY = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
})

_LISTENER = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map",
    "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class", "ssl.principal.mapping.rules",
})

#: Listener settings: per broker, never a cluster-wide default (Kafka's PerBrokerConfigs).
PER_BROKER_ONLY = _LISTENER | PER_LISTENER_ONLY

_CLUSTER_WIDE = frozenset({
    # LogCleaner.ReconfigurableConfigs
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    # DynamicLogConfig: the broker names of topic configs (not the message format)
    *(name for name in BROKER_DEFAULT_NAMES if name != "log.message.format.version"),
    "log.retention.minutes", "log.retention.hours", "log.roll.hours", "log.roll.jitter.hours",
    "log.local.retention.ms", "log.local.retention.bytes", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level",
    # DynamicThreadPool, SocketServer
    "num.io.threads", "num.network.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads",
    "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "max.connection.creation.rate",
    # metrics, producer state, remote storage, replication quotas (DynamicConfig.Broker)
    "metric.reporters", "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
})

#: Every name that may be changed dynamically (a ``listener.name.NAME.`` prefix aside).
DYNAMIC_CONFIGS = _CLUSTER_WIDE | PER_BROKER_ONLY

#: ``listener.name.NAME.CONFIG``: a per-listener override, changed per broker only.
LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]+\.(.+)")

#: Dynamic configs of Kafka type LIST, the only ones APPEND and SUBTRACT apply to.
LIST_CONFIGS = frozenset({
    "log.cleanup.policy", "sasl.enabled.mechanisms", "ssl.cipher.suites",
    "ssl.enabled.protocols", "metric.reporters", "sasl.kerberos.principal.to.local.rules",
})


def is_sensitive(name: str) -> bool:
    """Kafka's PASSWORD-typed broker configs (also behind a listener prefix): their values
    are never described (DescribeConfigs answers null with is_sensitive) nor logged."""
    return name.endswith((".password", "sasl.jaas.config", "ssl.keystore.key"))


#: Kafka's types of the dynamic names Ferry's BrokerConfig does not parse itself, so that
#: a value Kafka would refuse is refused here too (BrokerConfig checks the others).
VALUE_TYPES: dict[str, str] = {
    **dict.fromkeys((
        "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
        "background.threads", "log.cleaner.threads", "log.cleaner.io.buffer.size",
        "max.connections", "max.connections.per.ip", "max.connection.creation.rate",
        "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
        "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds"), "INT"),
    **dict.fromkeys((
        "log.cleaner.dedupe.buffer.size", "log.local.retention.ms", "log.local.retention.bytes",
        "sasl.kerberos.min.time.before.relogin", "leader.replication.throttled.rate",
        "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second",
        "remote.log.index.file.cache.total.size.bytes",
        "remote.log.manager.copy.max.bytes.per.second",
        "remote.log.manager.fetch.max.bytes.per.second"), "LONG"),
    **dict.fromkeys((
        "log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second",
        "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
        "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter"), "DOUBLE"),
    "transaction.partition.verification.enable": "BOOLEAN",
}
