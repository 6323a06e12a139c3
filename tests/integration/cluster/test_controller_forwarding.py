"""Admin requests on a freshly formed cluster, and without a controller, from librdkafka.

librdkafka sends CreateTopics to the broker that Metadata names as controller, and parks
the request until that broker is connected: a ControllerId of -1 (an election under way)
or of a broker the answer does not list (fenced in the answering broker's image) left it
parked until the client's own timeout, with no request ever sent. That was the cluster
suite's flake: ``create_topics(...).result(timeout=30)`` timing out on a cluster that had
just formed. Every broker now names a live broker of its answer (the active controller when
it is one), and the broker forwards to the controller within the request's timeout_ms.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cluster_process import running_cluster, wait_for
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

SETTINGS = {"offsets.topic.num.partitions": "1", "replica.fetch.wait.max.ms": "200"}


def _live_in_every_view(nodes) -> bool:
    views = [n.describe() for n in nodes]
    return all(v and sum(not b["fenced"] for b in v["brokers"].values()) == len(nodes)
               for v in views)


def _metadata_names_a_listed_controller(port: int) -> None:
    metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10)
    assert metadata.controller_id in metadata.brokers, (
        f"controller {metadata.controller_id} is not among brokers {sorted(metadata.brokers)}")


def test_create_topics_through_each_broker_as_the_cluster_forms(tmp_path: Path) -> None:
    """Topics created through each broker alone, the first as soon as one broker sees three
    live brokers, answer at once, and every Metadata names a listed broker as controller."""
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        def live() -> bool:
            view = nodes[0].describe()
            return bool(view) and sum(not b["fenced"] for b in view["brokers"].values()) == 3
        wait_for(live, 40, "three live brokers", nodes)
        for node in nodes:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{node.kafka_port}"})
            name = f"formed-{node.node_id}"
            started = time.monotonic()
            admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=10,
                                request_timeout=20)[name].result(timeout=25)
            assert time.monotonic() - started < 20
        wait_for(lambda: _live_in_every_view(nodes), 20, "every view with three brokers",
                 nodes)
        for node in nodes:
            _metadata_names_a_listed_controller(node.kafka_port)


def test_create_topics_without_a_controller_answers_request_timed_out(tmp_path: Path
                                                                      ) -> None:
    """Two of three nodes paused: the third has no quorum, hence no controller. CreateTopics
    through it is answered REQUEST_TIMED_OUT once its timeout_ms passed, not left hanging
    in the client; once the others resume, the same request succeeds."""
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        wait_for(lambda: _live_in_every_view(nodes), 40, "three live brokers", nodes)
        survivor, *paused = nodes
        for node in paused:
            node.pause()
        try:
            wait_for(lambda: (survivor.describe() or {}).get("controller_id", 0) is None, 20,
                     "the survivor to have no controller", nodes)
            _metadata_names_a_listed_controller(survivor.kafka_port)
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{survivor.kafka_port}"})
            started = time.monotonic()
            with pytest.raises(KafkaException) as refused:
                admin.create_topics([NewTopic("no-quorum", 1, 1)], operation_timeout=3,
                                    request_timeout=20)["no-quorum"].result(timeout=25)
            took = time.monotonic() - started
            assert refused.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT, refused.value
            assert took < 15, f"answered after {took:.1f} s"
        finally:
            for node in paused:
                node.resume()
        wait_for(lambda: _live_in_every_view(nodes), 30, "three live brokers again", nodes)
        admin.create_topics([NewTopic("no-quorum", 1, 1)], operation_timeout=10,
                            request_timeout=20)["no-quorum"].result(timeout=25)
