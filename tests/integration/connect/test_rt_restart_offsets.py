"""Restarts, offsets and config providers of the real standalone worker, through its REST
API on ``embedded:``: automatic restart with backoff, KIP-745 restart requests, KIP-875
offsets (GET/PATCH/DELETE and their real effect), and secrets from ``${env:...}`` and
``${file:...}`` that reach tasks but never REST answers or logs."""

from __future__ import annotations

import itertools
import json
import logging
import re

import pytest
from rt_test_connectors import (
    REC,
    Harness,
    call,
    committed,
    end_offset,
    read_topic,
    wait_for,
)

from connect.runtime.herder import ConnectorTaskId
from core.backends import ProducerRecord

pytestmark = pytest.mark.integration

STOPPED_ONLY = "must be in the STOPPED state"


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "log")
    yield h
    h.close()


def _source(**extra: str) -> dict[str, str]:
    return {"connector.class": "ScriptedSource", **extra}


def _status(base: str, name: str) -> dict:
    code, body = call(base, "GET", f"/connectors/{name}/status")
    assert code == 200, body
    return body


def _task_states(base: str, name: str) -> list[str]:
    return [t["state"] for t in _status(base, name)["tasks"]]


# ---------------------------------------------------------------------- automatic restart
def test_failing_task_restarts_with_growing_backoff_until_it_recovers(harness, caplog) -> None:
    """FAILED with the trace while it raises, restarted after 200, 400, 800, 800 ms (the
    delays the runtime logs; an attempt that ran longer than the backoff resets it), and
    RUNNING once a start succeeds."""
    caplog.set_level(logging.INFO, logger="connect.runtime.worker_task")
    h = harness
    base = h.rest()
    h.create("flaky", _source(**{"fail.starts": "4",
                                 "errors.task.restart.backoff.initial.ms": "200",
                                 "errors.task.restart.backoff.max.ms": "800"}))
    failed = wait_for(lambda: (t := _status(base, "flaky")["tasks"]) and
                      t[0]["state"] == "FAILED" and t[0], "the task to show FAILED")
    assert "RuntimeError: scripted start failure" in failed["trace"]
    h.wait_task("flaky", "RUNNING")
    assert REC.starts("flaky") == 5
    assert "trace" not in _status(base, "flaky")["tasks"][0]
    delays = [float(m.group(1)) for r in caplog.records
              if (m := re.fullmatch(r"(?:restarting task flaky-0|task flaky-0 failed again the "
                                    r"same way \(.*\); restart \d+) in ([0-9.]+)s",
                                    r.getMessage()))]
    assert len(delays) == 4, delays
    assert delays[0] == 0.2
    for before, after in itertools.pairwise(delays):
        assert after in (min(before * 2, 0.8), 0.2), delays
    assert any(after > before for before, after in itertools.pairwise(delays))


def test_restart_disabled_keeps_the_task_failed_until_restarted_by_hand(harness) -> None:
    h = harness
    base = h.rest()
    backoff = {"errors.task.restart.backoff.initial.ms": "50"}
    h.create("manual", _source(**{"fail.tasks": "0", "errors.task.restart.enable": "false",
                                  **backoff}))
    h.create("auto", _source(**{"fail.starts": "3", **backoff}))
    # "auto" needs three restarts after 50, 100 and 200 ms; "manual" with the same backoff
    # would have restarted by then.
    h.wait_task("auto", "RUNNING")
    h.wait_task("manual", "FAILED")
    assert REC.starts("manual") == 1
    # A FAILED task stays FAILED through pause and resume (Kafka: until restarted).
    assert call(base, "PUT", "/connectors/manual/pause")[0] == 202
    assert _task_states(base, "manual") == ["FAILED"]
    assert call(base, "PUT", "/connectors/manual/resume")[0] == 202
    assert _task_states(base, "manual") == ["FAILED"]
    assert call(base, "POST", "/connectors/manual/tasks/0/restart") == (204, None)
    wait_for(lambda: REC.starts("manual") == 2, "the second start")
    h.wait_task("manual", "FAILED")
    assert call(base, "POST", "/connectors/manual/tasks/7/restart")[0] == 404
    assert call(base, "POST", "/connectors/nope/tasks/0/restart")[0] == 404


# ---------------------------------------------------------------------- KIP-745 restarts
def _instances(h: Harness, name: str, count: int) -> list[object]:
    """Each running task object (WorkerTask compares by identity): a restarted task gets a
    new one. The objects themselves, not their id(): a test holding only ids could see a
    freed task's id given again to its replacement."""
    return [h.herder.worker.tasks.get(ConnectorTaskId(name, i)) for i in range(count)]


def test_restart_connector_request_semantics(harness) -> None:
    """Kafka's KIP-745 rules. No flags: only the connector instance restarts, 204.
    ``includeTasks``/``onlyFailed``: 202 with the status where exactly the instances being
    restarted show RESTARTING: the connector unless ``onlyFailed`` and it is not FAILED,
    tasks only with ``includeTasks`` (and only FAILED ones with ``onlyFailed``)."""
    h = harness
    base = h.rest()
    h.create("multi", _source(**{"tasks.max": "3", "fail.tasks": "1",
                                 "errors.task.restart.enable": "false"}))
    for task, state in ((0, "RUNNING"), (1, "FAILED"), (2, "RUNNING")):
        h.wait_task("multi", state, task)
    assert REC.connector_starts["multi"] == 1

    before = _instances(h, "multi", 3)
    assert call(base, "POST", "/connectors/multi/restart") == (204, None)
    assert REC.connector_starts["multi"] == 2
    assert _instances(h, "multi", 3) == before
    assert [REC.starts("multi", i) for i in range(3)] == [1, 1, 1]

    code, body = call(base, "POST", "/connectors/multi/restart", includeTasks="true",
                      onlyFailed="true")
    assert code == 202
    assert body["name"] == "multi" and body["type"] == "source"
    assert body["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in body["tasks"]] == ["RUNNING", "RESTARTING", "RUNNING"]
    after = _instances(h, "multi", 3)
    assert (after[0], after[2]) == (before[0], before[2]) and after[1] != before[1]
    wait_for(lambda: REC.starts("multi", 1) == 2, "task 1 started again")
    h.wait_task("multi", "FAILED", 1)
    assert REC.connector_starts["multi"] == 2

    code, body = call(base, "POST", "/connectors/multi/restart", onlyFailed="true")
    assert code == 202
    assert "RESTARTING" not in json.dumps(body)
    assert _instances(h, "multi", 3) == after

    code, body = call(base, "POST", "/connectors/multi/restart", includeTasks="true")
    assert code == 202
    assert body["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING"] * 3
    assert not set(_instances(h, "multi", 3)) & set(after)
    assert REC.connector_starts["multi"] == 3
    for task, state in ((0, "RUNNING"), (1, "FAILED"), (2, "RUNNING")):
        h.wait_task("multi", state, task)

    assert call(base, "POST", "/connectors/nope/restart")[0] == 404
    assert call(base, "POST", "/connectors/multi/restart", onlyFailed="maybe")[0] == 400


def test_only_failed_restarts_a_failed_connector(harness) -> None:
    h = harness
    base = h.rest()
    h.create("cfail", _source(**{"fail.connector.starts": "1"}))
    status = _status(base, "cfail")
    assert status["connector"]["state"] == "FAILED"
    assert "scripted connector start failure" in status["connector"]["trace"]
    code, body = call(base, "POST", "/connectors/cfail/restart", onlyFailed="true")
    assert code == 202
    assert body["connector"]["state"] == "RESTARTING"
    assert _status(base, "cfail")["connector"]["state"] == "RUNNING"
    h.wait_task("cfail", "RUNNING")


def test_restarted_task_of_a_paused_connector_stays_paused(harness) -> None:
    h = harness
    base = h.rest()
    h.create("pz", _source(**{"tasks.max": "2"}))
    h.wait_task("pz", "RUNNING", 0)
    h.wait_task("pz", "RUNNING", 1)
    assert call(base, "PUT", "/connectors/pz/pause")[0] == 202
    wait_for(lambda: _task_states(base, "pz") == ["PAUSED", "PAUSED"], "both paused")
    assert call(base, "POST", "/connectors/pz/tasks/0/restart")[0] == 204
    assert h.herder.worker.tasks[ConnectorTaskId("pz", 0)].paused
    wait_for(lambda: REC.starts("pz", 0) == 2, "task 0 restarted")
    wait_for(lambda: _task_states(base, "pz") == ["PAUSED", "PAUSED"], "still paused")
    assert call(base, "POST", "/connectors/pz/restart", includeTasks="true")[0] == 202
    assert all(h.herder.worker.tasks[ConnectorTaskId("pz", i)].paused for i in (0, 1))
    wait_for(lambda: REC.starts("pz", 0) == 3 and REC.starts("pz", 1) == 2, "restarts",
             detail=lambda: (REC.starts("pz", 0), REC.starts("pz", 1)))
    wait_for(lambda: _task_states(base, "pz") == ["PAUSED", "PAUSED"], "both paused again")
    assert _status(base, "pz")["connector"]["state"] == "PAUSED"


# ---------------------------------------------------------------------- offsets
def test_source_offsets_get_alter_reset_and_their_effect(harness) -> None:
    h = harness
    base = h.rest()
    h.create("osrc", _source(topic="so", count="5"))
    expected = {"offsets": [{"partition": {"src": "osrc"}, "offset": {"i": 4}}]}
    wait_for(lambda: call(base, "GET", "/connectors/osrc/offsets") == (200, expected),
             "the offset of the fifth record")
    patch = {"offsets": [{"partition": {"src": "osrc"}, "offset": {"i": 1}}]}
    for method, body in (("PATCH", patch), ("DELETE", None)):
        code, error = call(base, method, "/connectors/osrc/offsets", body)
        assert code == 400 and error["error_code"] == 400 and STOPPED_ONLY in error["message"]
    assert call(base, "PUT", "/connectors/osrc/pause")[0] == 202
    assert call(base, "PATCH", "/connectors/osrc/offsets", patch)[0] == 400  # PAUSED is not enough

    assert call(base, "PUT", "/connectors/osrc/stop") == (204, None)
    assert call(base, "PATCH", "/connectors/osrc/offsets", {"offsets": []})[0] == 400
    code, body = call(base, "PATCH", "/connectors/osrc/offsets", patch)
    assert code == 200
    assert body == {"message": "The Connect framework-managed offsets for this connector "
                               "have been altered successfully. However, if this connector "
                               "manages offsets externally, they will need to be manually "
                               "altered in the system that the connector uses."}
    assert call(base, "GET", "/connectors/osrc/offsets")[1] == patch
    assert call(base, "PUT", "/connectors/osrc/resume")[0] == 202
    wait_for(lambda: end_offset(h.backend, "so") == 8, "v2..v4 again")

    assert call(base, "PUT", "/connectors/osrc/stop")[0] == 204
    code, body = call(base, "DELETE", "/connectors/osrc/offsets")
    assert code == 200 and "have been reset successfully" in body["message"]
    assert call(base, "GET", "/connectors/osrc/offsets") == (200, {"offsets": []})
    assert call(base, "PUT", "/connectors/osrc/resume")[0] == 202
    wait_for(lambda: end_offset(h.backend, "so") == 13, "everything again")
    values = [json.loads(r.value) for r in read_topic(h.backend, "so")]
    assert values == [f"v{i}" for i in (0, 1, 2, 3, 4, 2, 3, 4, 0, 1, 2, 3, 4)]
    assert call(base, "GET", "/connectors/nope/offsets")[0] == 404


def test_source_connector_checks_offsets_it_is_given(harness, tmp_path) -> None:
    """The connector's ``alter_offsets`` takes part, as in Kafka: FileStreamSource refuses
    an offset without ``position`` (400) and, accepting one, the plain success message."""
    h = harness
    base = h.rest()
    (tmp_path / "in.txt").write_text("a\nb\nc\n")
    h.create("fsrc", {"connector.class": "FileStreamSource", "topic": "f",
                      "file": str(tmp_path / "in.txt")})
    partition = {"filename": str(tmp_path / "in.txt")}
    wait_for(lambda: call(base, "GET", "/connectors/fsrc/offsets")[1]["offsets"]
             == [{"partition": partition, "offset": {"position": 6}}], "position 6")
    assert call(base, "PUT", "/connectors/fsrc/stop")[0] == 204
    code, body = call(base, "PATCH", "/connectors/fsrc/offsets", {
        "offsets": [{"partition": partition, "offset": {"line": 1}}]})
    assert code == 400 and "position" in body["message"]
    code, body = call(base, "PATCH", "/connectors/fsrc/offsets", {
        "offsets": [{"partition": partition, "offset": {"position": 2}}]})
    assert (code, body) == (200, {"message": "The offsets for this connector have been "
                                             "altered successfully"})
    assert call(base, "PUT", "/connectors/fsrc/resume")[0] == 202
    wait_for(lambda: end_offset(h.backend, "f") == 5, "b and c again")
    assert [r.value for r in read_topic(h.backend, "f")][3:] == [b'"b"', b'"c"']


def test_sink_offsets_get_alter_reset_and_their_effect(harness) -> None:
    h = harness
    base = h.rest()
    h.backend.create_topic("si", 1)
    h.backend.produce("si", [ProducerRecord(None, json.dumps(i).encode()) for i in range(6)])
    h.create("osink", {"connector.class": "CollectingSink", "topics": "si"})
    at = {"kafka_topic": "si", "kafka_partition": 0}

    def offsets(n: int) -> tuple[int, dict]:
        return 200, {"offsets": [{"partition": at, "offset": {"kafka_offset": n}}]}

    wait_for(lambda: call(base, "GET", "/connectors/osink/offsets") == offsets(6), "at 6")
    patch = {"offsets": [{"partition": at, "offset": {"kafka_offset": 2}}]}
    code, error = call(base, "PATCH", "/connectors/osink/offsets", patch)
    assert code == 400 and STOPPED_ONLY in error["message"]

    assert call(base, "PUT", "/connectors/osink/stop")[0] == 204
    for bad in ({"kafka_topic": "si"}, {"kafka_partition": 0}):
        code, error = call(base, "PATCH", "/connectors/osink/offsets", {
            "offsets": [{"partition": bad, "offset": {"kafka_offset": 1}}]})
        assert code == 400 and "kafka_" in error["message"], error
    code, error = call(base, "PATCH", "/connectors/osink/offsets", {
        "offsets": [{"partition": at, "offset": {"kafka_offset": -1}}]})
    assert code == 400 and "kafka_offset" in error["message"]
    code, body = call(base, "PATCH", "/connectors/osink/offsets", patch)
    assert code == 200 and "altered successfully" in body["message"]
    assert committed(h.backend, "connect-osink", "si") == 2
    assert call(base, "GET", "/connectors/osink/offsets") == offsets(2)
    assert call(base, "PUT", "/connectors/osink/resume")[0] == 202
    wait_for(lambda: REC.values("osink") == [0, 1, 2, 3, 4, 5, 2, 3, 4, 5], "2..5 again",
             detail=lambda: REC.values("osink"))
    wait_for(lambda: committed(h.backend, "connect-osink", "si") == 6, "at 6 again")

    assert call(base, "PUT", "/connectors/osink/stop")[0] == 204
    code, body = call(base, "DELETE", "/connectors/osink/offsets")
    assert code == 200 and "reset successfully" in body["message"]
    assert committed(h.backend, "connect-osink", "si") is None  # deleted, as Kafka does
    assert call(base, "PUT", "/connectors/osink/resume")[0] == 202
    wait_for(lambda: REC.values("osink")[10:] == [0, 1, 2, 3, 4, 5], "everything again",
             detail=lambda: REC.values("osink"))


# ---------------------------------------------------------------------- config providers
def test_config_provider_secrets_reach_tasks_but_never_rest_or_logs(tmp_path, monkeypatch,
                                                                     caplog) -> None:
    caplog.set_level(logging.DEBUG)
    secret, token = "s3cret-from-env-7f1c", "t0ken-from-file-92ab"
    monkeypatch.setenv("FERRY_TEST_SECRET", secret)
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"token={token}\nother=x\n")
    h = Harness(tmp_path / "log", **{"config.providers": "file,env"})
    try:
        base = h.rest()
        raw = {"password": "${env:FERRY_TEST_SECRET}", "token": f"${{file:{secrets}:token}}",
               "note": "user=${env:FERRY_TEST_SECRET};ok"}
        code, info = call(base, "POST", "/connectors", {"name": "sec", "config": _source(
            **{"tasks.max": "2", **raw})})
        assert code == 201, info
        h.wait_task("sec", "RUNNING", 0)
        h.wait_task("sec", "RUNNING", 1)
        for task in (0, 1):
            props = REC.task_props[("sec", task)]
            assert (props["password"], props["token"]) == (secret, token)
            assert props["note"] == f"user={secret};ok"
        assert REC.connector_props["sec"]["token"] == token

        answers = [info]
        for path in ("/connectors/sec", "/connectors/sec/config", "/connectors/sec/tasks",
                     "/connectors/sec/status", "/connectors/sec/tasks/0/status",
                     "/connectors?expand=info&expand=status"):
            code, body = call(base, "GET", path)
            assert code == 200, (path, body)
            answers.append(body)
        code, validated = call(base, "PUT", "/connector-plugins/ScriptedSource/config/validate",
                               _source(**raw))
        answers.append(validated)
        text = json.dumps(answers)
        assert secret not in text and token not in text
        assert call(base, "GET", "/connectors/sec/config")[1]["token"] == raw["token"]
        for task in call(base, "GET", "/connectors/sec/tasks")[1]:
            assert {k: task["config"][k] for k in raw} == raw

        # A restart re-resolves: the task gets the file's new value.
        secrets.write_text("token=rotated-token\n")
        assert call(base, "POST", "/connectors/sec/restart", includeTasks="true")[0] == 202
        wait_for(lambda: REC.task_props[("sec", 0)]["token"] == "rotated-token", "rotation")
    finally:
        h.close()
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert secret not in logged and token not in logged


def test_sink_created_before_its_topic_consumes_once_it_exists(harness) -> None:
    """``ferry connect standalone source.json sink.json`` races: the sink's group may be
    joined before the source created the topic. The sink picks the topic up once it
    exists, from its start."""
    h = harness
    h.create("early", {"connector.class": "CollectingSink", "topics": "later,other"})
    h.wait_task("early", "RUNNING")
    h.backend.create_topic("later", 1)
    h.backend.produce("later", [ProducerRecord(None, json.dumps(i).encode())
                                for i in range(3)])
    wait_for(lambda: REC.values("early") == [0, 1, 2], "the records of the new topic",
             detail=lambda: REC.values("early"))
    wait_for(lambda: committed(h.backend, "connect-early", "later") == 3, "commit at 3")
    h.backend.create_topic("other", 1)
    h.backend.produce("other", [ProducerRecord(None, b"9")])
    wait_for(lambda: REC.values("early") == [0, 1, 2, 9], "the second topic too")
    assert REC.starts("early") == 1


def test_sink_commits_what_pre_commit_allows_not_the_consumer_position(harness) -> None:
    """Sink offsets go to group ``connect-<name>`` only through ``pre_commit``: a task
    that has not made records durable holds the commit back."""
    h = harness
    h.backend.create_topic("pc", 1)
    h.backend.produce("pc", [ProducerRecord(None, json.dumps(i).encode()) for i in range(10)])
    h.create("held", {"connector.class": "CollectingSink", "topics": "pc",
                      "precommit.max": "4"})
    wait_for(lambda: REC.values("held") == list(range(10)), "all ten records")

    def calls_at_ten() -> int:
        with REC.lock:
            return sum(1 for c in REC.precommits["held"] if c.get(("pc", 0)) == 10)

    # After the second pre_commit offered 10, the commit following the first is done.
    wait_for(lambda: calls_at_ten() >= 2, "two pre_commit calls offering offset 10")
    assert committed(h.backend, "connect-held", "pc") == 4
