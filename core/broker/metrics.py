"""What the broker counts on its data path, for ``/metrics`` (``core.broker.collector``).

Everything here is bumped on the event loop's thread only (request dispatch, Produce,
Fetch), with plain integer adds into dicts and lists: no locks, no label lookups, no
objects per request, so counting costs about what one dict lookup costs. The collector
reads copies at scrape time on the HTTP thread; a copy of a dict is taken whole under the
GIL, and a count read while it is being bumped is at worst one request behind.
"""

from __future__ import annotations

from bisect import bisect_left as _bucket

__all__ = ["LATENCY_BUCKETS_S", "BrokerMetrics", "TopicCounts"]

#: Request latency buckets (seconds): sub-millisecond ones first, since most requests of a
#: local broker take well under 1 ms (prometheus-client's defaults start at 5 ms).
LATENCY_BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                     0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class TopicCounts:
    """Kafka's BrokerTopicMetrics of one topic (or of all topics together)."""

    __slots__ = ("bytes_in", "bytes_out", "bytes_rejected", "failed_fetch",
                 "failed_produce", "messages_in", "total_fetch", "total_produce")

    def __init__(self) -> None:
        self.bytes_in = self.messages_in = self.bytes_out = self.bytes_rejected = 0
        self.total_produce = self.failed_produce = self.total_fetch = self.failed_fetch = 0


class BrokerMetrics:
    """The broker's counters; one per BrokerState (``state.metrics``, None when off)."""

    def __init__(self) -> None:
        #: (api_key, api_version) -> [count, errors, seconds, bucket counts...]; errors are
        #: requests whose handler failed (the connection was closed).
        self.requests: dict[tuple[int, int], list[float]] = {}
        self.topics: dict[str, TopicCounts] = {}
        self.all_topics = TopicCounts()
        self.in_flight = 0
        self.produce_purgatory = 0  # Produce requests waiting for an fsync (acks=all)
        self.fetch_purgatory = 0  # Fetch requests waiting for data (long poll)
        self.connections_accepted = 0
        self.event_loop_lag_s = 0.0  # how late the broker's periodic tick last ran
        self.last_tick = 0.0  # time.monotonic() of that tick (health: a stuck loop)

    def request_done(self, api_key: int, api_version: int, seconds: float,
                     failed: bool) -> None:
        key = (api_key, api_version)
        entry = self.requests.get(key)
        if entry is None:  # the last slot counts requests above the largest bucket
            entry = self.requests[key] = [0] * (4 + len(LATENCY_BUCKETS_S))
        entry[0] += 1
        entry[2] += seconds
        entry[3 + _bucket(LATENCY_BUCKETS_S, seconds)] += 1
        if failed:
            entry[1] += 1

    def _topic(self, topic: str) -> TopicCounts:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        return counts

    def produced(self, topic: str, nbytes: int, messages: int) -> None:
        """One batch appended to ``topic``."""
        counts = self.topics.get(topic) or self._topic(topic)
        counts.bytes_in += nbytes
        counts.messages_in += messages
        counts.total_produce += 1
        total = self.all_topics
        total.bytes_in += nbytes
        total.messages_in += messages
        total.total_produce += 1

    def produce_failed(self, topic: str, nbytes: int) -> None:
        """One partition's batch refused (``nbytes`` of it counted as rejected)."""
        for counts in (self._topic(topic), self.all_topics):
            counts.bytes_rejected += nbytes
            counts.total_produce += 1
            counts.failed_produce += 1

    def fetched(self, topic: str, nbytes: int, failed: bool) -> None:
        """One partition of a Fetch answered with ``nbytes`` of records."""
        counts = self.topics.get(topic) or self._topic(topic)
        counts.bytes_out += nbytes
        counts.total_fetch += 1
        total = self.all_topics
        total.bytes_out += nbytes
        total.total_fetch += 1
        if failed:
            counts.failed_fetch += 1
            total.failed_fetch += 1
