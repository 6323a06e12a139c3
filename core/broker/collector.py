"""The broker's ``/metrics``: Kafka's JMX metrics under the JMX exporter/Strimzi names.

A prometheus-client custom collector: everything is read at scrape time (from the data
path's counters in ``core.broker.metrics``, the log manager and the group coordinator),
so deleted topics and groups disappear and the data path only ever adds integers. Names
are Strimzi's rules applied to Kafka's MBeans (``kafka.server:type=BrokerTopicMetrics,
name=BytesInPerSec,topic=T`` -> ``kafka_server_brokertopicmetrics_bytesin_total{topic}``;
the series without ``topic`` is all topics together), kafka_exporter's for consumer lag,
and ``ferry_*`` where Kafka has no equivalent. docs/metrics.md maps each to its meaning.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from core.broker.lag import group_lags
from core.broker.metrics import LATENCY_BUCKETS_S, TopicCounts
from core.broker.registry import lookup
from core.broker.replication.observed import ReplicaCounts, replica_counts
from core.group.errors import CoordinatorError
from core.log.errors import StorageError
from core.log.flush_stats import FLUSH_BUCKETS_S, FLUSH_STATS

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from core.broker.state import BrokerState

__all__ = ["BrokerCollector"]

_TOPIC_COUNTERS = (  # (name, TopicCounts attribute, help)
    ("kafka_server_brokertopicmetrics_bytesin", "bytes_in",
     "Bytes appended by Produce requests (record batches as received)"),
    ("kafka_server_brokertopicmetrics_messagesin", "messages_in",
     "Records appended by Produce requests"),
    ("kafka_server_brokertopicmetrics_bytesout", "bytes_out",
     "Record bytes sent in Fetch responses"),
    ("kafka_server_brokertopicmetrics_bytesrejected", "bytes_rejected",
     "Bytes of Produce batches refused (too large, invalid, storage errors)"),
    ("kafka_server_brokertopicmetrics_totalproducerequests", "total_produce",
     "Produce partition requests"),
    ("kafka_server_brokertopicmetrics_failedproducerequests", "failed_produce",
     "Produce partition requests that failed"),
    ("kafka_server_brokertopicmetrics_totalfetchrequests", "total_fetch",
     "Fetch partition requests answered"),
    ("kafka_server_brokertopicmetrics_failedfetchrequests", "failed_fetch",
     "Fetch partition requests answered with an error"),
)


class BrokerCollector(Collector):
    """Collects one broker's metrics; ``connections`` counts its open client connections
    (the listener's name is ``listener``)."""

    def __init__(self, state: BrokerState, connections: Callable[[], int],
                 listener: str = "PLAINTEXT") -> None:
        self._state = state
        self._connections = connections
        self._listener = listener

    def collect(self) -> Iterator[Metric]:
        state = self._state
        metrics = state.metrics
        if metrics is not None:
            yield from _topic_metrics(metrics.topics.copy(), metrics.all_topics,
                                      set(state.manager.topics()))
            yield from _request_metrics(metrics.requests.copy())
            yield _gauge("ferry_broker_requests_in_flight",
                         "Requests read and not yet answered", metrics.in_flight)
            purgatory = GaugeMetricFamily(
                "kafka_server_delayedoperationpurgatory_purgatorysize",
                "Requests waiting: Produce for an fsync (acks=all), Fetch for data",
                labels=["delayedoperation"])
            purgatory.add_metric(["Produce"], metrics.produce_purgatory)
            purgatory.add_metric(["Fetch"], metrics.fetch_purgatory)
            yield purgatory
            yield _gauge("ferry_broker_event_loop_lag_seconds",
                         "How late the broker's 100 ms periodic tick last ran (the network "
                         "thread's saturation)", metrics.event_loop_lag_s)
        connections = GaugeMetricFamily(
            "kafka_server_socketservermetrics_connection_count",
            "Open client connections per listener", labels=["listener"])
        connections.add_metric([self._listener], self._connections())
        yield connections
        yield from _authentication_metrics(state)
        yield from _log_metrics(state)
        yield from _lag_metrics(state)
        if state.quotas is not None:
            throttled = CounterMetricFamily(
                "ferry_quota_throttle_seconds", "Seconds clients were throttled for going "
                "over a client quota, per quota type", labels=["quota"])
            for key, seconds in sorted(state.quotas.throttled_s.items()):
                throttled.add_metric([key], seconds)
            yield throttled


def _authentication_metrics(state: BrokerState) -> Iterator[Metric]:
    """Kafka's socket-server-metrics per listener, named as Strimzi's exporter rules name
    them (``kafka_server_$type_$name`` for ``*-total`` attributes)."""
    counts = dict(state.auth_counts)
    if not counts:
        return
    for attribute, doc in (("successful", "Successful authentications"),
                           ("failed", "Failed authentications (wrong credential, unknown "
                                      "mechanism, bad TLS certificate, SASL misuse)"),
                           ("reauthentications", "Successful re-authentications (KIP-368)")):
        name = "successful_reauthentication" if attribute == "reauthentications" \
            else f"{attribute}_authentication"
        family = CounterMetricFamily(f"kafka_server_socket_server_metrics_{name}", doc,
                                     labels=["listener"])
        for listener, c in sorted(counts.items()):
            family.add_metric([listener], getattr(c, attribute))
        yield family


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _topic_metrics(topics: dict[str, TopicCounts], total: TopicCounts, existing: set[str]
                   ) -> Iterator[Metric]:
    for name, attribute, documentation in _TOPIC_COUNTERS:
        family = CounterMetricFamily(name, documentation, labels=["topic"])
        for topic, counts in sorted(topics.items()):
            if topic in existing:  # a deleted topic's series go, as Kafka removes them
                family.add_metric([topic], getattr(counts, attribute))
        # The all-topics series has no topic label, as the JMX exporter shows the MBean
        # without one; it keeps counting across topic deletions.
        family.samples.append(Sample(name + "_total", {}, getattr(total, attribute)))
        yield family


def _request_metrics(requests: dict[tuple[int, int], list[float]]) -> Iterator[Metric]:
    count = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                "Requests served per API and version",
                                labels=["request", "version"])
    errors = CounterMetricFamily("kafka_network_requestmetrics_errors",
                                 "Requests per outcome, as Kafka's ErrorsPerSec: error NONE "
                                 "is success, UNKNOWN_SERVER_ERROR a handler that failed "
                                 "(the connection was closed)", labels=["request", "error"])
    latency = HistogramMetricFamily("ferry_request_duration_seconds",
                                    "Time from a request read to its answer encoded",
                                    labels=["api", "version"])
    outcomes: dict[str, list[float]] = {}  # api -> [succeeded, failed]
    for (api_key, version), entry in sorted(requests.items()):
        spec = lookup(api_key)
        api = spec.name.removesuffix("Request") if spec else str(api_key)
        count.add_metric([api, str(version)], entry[0])
        outcome = outcomes.setdefault(api, [0, 0])
        outcome[0] += entry[0] - entry[1]
        outcome[1] += entry[1]
        buckets, running = [], 0.0
        for bound, hits in zip(LATENCY_BUCKETS_S, entry[3:-1], strict=True):
            running += hits
            buckets.append((repr(bound), running))
        buckets.append(("+Inf", entry[0]))
        latency.add_metric([api, str(version)], buckets, entry[2])
    for api, (succeeded, failed) in sorted(outcomes.items()):
        errors.add_metric([api, "NONE"], succeeded)
        if failed:
            errors.add_metric([api, "UNKNOWN_SERVER_ERROR"], failed)
    yield count
    yield errors
    yield latency


def _log_metrics(state: BrokerState) -> Iterator[Metric]:
    manager = state.manager
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of a partition's log on disk",
                             labels=["topic", "partition"])
    segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of a partition",
                                 labels=["topic", "partition"])
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "First offset a partition "
                              "holds", labels=["topic", "partition"])
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "Next offset to be written",
                            labels=["topic", "partition"])
    current = GaugeMetricFamily("kafka_topic_partition_current_offset",
                                "Log end offset (kafka_exporter)", labels=["topic", "partition"])
    oldest = GaugeMetricFamily("kafka_topic_partition_oldest_offset",
                               "Log start offset (kafka_exporter)",
                               labels=["topic", "partition"])
    partitions = GaugeMetricFamily("kafka_topic_partitions", "Partitions of a topic",
                                   labels=["topic"])
    total = 0
    for topic in manager.topics():
        try:
            meta = manager.topic(topic)
            count = meta.partitions
            for partition in range(count):
                plog = manager.log(topic, partition)
                labels = [topic, str(partition)]
                first, last = plog.log_start_offset, plog.log_end_offset
                size.add_metric(labels, plog.size_bytes)
                segments.add_metric(labels, len(plog.segments()))
                start.add_metric(labels, first)
                end.add_metric(labels, last)
                if not meta.internal:
                    current.add_metric(labels, last)
                    oldest.add_metric(labels, first)
        except StorageError:  # deleted or closed during the scrape
            continue
        total += count
        if not meta.internal:
            partitions.add_metric([topic], count)
    yield from (size, segments, start, end, current, oldest, partitions)
    online = manager.health.online
    counts = (replica_counts(state.replicas) if state.replicas is not None
              else ReplicaCounts.single_node(total))
    yield _gauge("kafka_server_replicamanager_partitioncount",
                 "Partitions with a replica on this broker", counts.partitions)
    yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads",
                 counts.leaders)
    yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                 "Partitions led here with fewer in-sync replicas than replicas",
                 counts.under_replicated)
    yield _gauge("kafka_server_replicamanager_underminisrpartitioncount",
                 "Partitions led here with fewer in-sync replicas than min.insync.replicas",
                 counts.under_min_isr)
    yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks",
                              "Replicas removed from an ISR this broker leads (per change)",
                              value=counts.isr_shrinks)
    yield CounterMetricFamily("kafka_server_replicamanager_isrexpands",
                              "Replicas added to an ISR this broker leads (per change)",
                              value=counts.isr_expands)
    yield _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                 "1 on the active controller (a single node controls itself)",
                 counts.active_controller)
    yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                 "Partitions without a leader (reported by the active controller)",
                 counts.offline)
    yield _gauge("kafka_log_logmanager_offlinelogdirectorycount",
                 "Log directories that failed a write (core.log.dir_health)",
                 0 if online else 1)
    yield CounterMetricFamily("ferry_log_dir_failures", "Times the data directory went "
                              "offline", value=manager.health.failures)
    yield _flush_histogram()


def _flush_histogram() -> HistogramMetricFamily:
    """Kafka's LogFlushRateAndTimeMs: every log flush (fsync) of this process."""
    count, seconds, hits = FLUSH_STATS.snapshot()
    buckets, running = [], 0
    for bound, n in zip(FLUSH_BUCKETS_S, hits, strict=False):
        running += n
        buckets.append((repr(bound), running))
    buckets.append(("+Inf", count))
    family = HistogramMetricFamily("ferry_log_flush_duration_seconds",
                                   "Time of each log flush (fsync), Kafka's "
                                   "LogFlushRateAndTimeMs")
    family.add_metric([], buckets, seconds)
    return family


def _lag_metrics(state: BrokerState) -> Iterator[Metric]:
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "Log end offset minus the group's "
                            "committed offset", labels=["consumergroup", "topic", "partition"])
    lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Lag summed over a topic's "
                                "partitions", labels=["consumergroup", "topic"])
    offset = GaugeMetricFamily("kafka_consumergroup_current_offset", "The group's committed "
                               "offset", labels=["consumergroup", "topic", "partition"])
    seconds = GaugeMetricFamily("ferry_consumergroup_lag_seconds", "Age of the oldest "
                                "unconsumed record (0 when caught up)",
                                labels=["consumergroup", "topic", "partition"])
    members = GaugeMetricFamily("kafka_consumergroup_members", "Members of a group",
                                labels=["consumergroup"])
    sums: dict[tuple[str, str], int] = {}
    for item in group_lags(state.coordinator, state.manager, int(time.time() * 1000)):
        labels = [item.group, item.topic, str(item.partition)]
        lag.add_metric(labels, item.lag)
        offset.add_metric(labels, item.committed)
        seconds.add_metric(labels, item.lag_seconds)
        key = (item.group, item.topic)
        sums[key] = sums.get(key, 0) + item.lag
    for (group, topic), value in sorted(sums.items()):
        lag_sum.add_metric([group, topic], value)
    try:
        for group, _type, _state in state.coordinator.list_groups():
            members.add_metric([group], len(state.coordinator.describe_group(group).members))
    except CoordinatorError:
        pass  # still loading: no groups to show yet
    yield from (lag, lag_sum, offset, seconds, members)
