"""DatagenConnector/Task driven directly: determinism, splits, limits, resume, pacing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conn_fakes import FakeConnectorContext, FakeOffsetStore, FakeSourceTaskContext

from connect.api import ConfigError, ConnectError, SourceRecord, validate_value
from connectors.datagen import QUICKSTARTS, DatagenConnector, DatagenTask


class FakeClock:
    """Monotonic time that moves only when the task sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def task_configs(max_tasks: int = 1, **config: Any) -> list[dict[str, str]]:
    props = {"kafka.topic": "t", "quickstart": "orders", **{k: str(v) for k, v in config.items()}}
    connector = DatagenConnector()
    connector.initialize(FakeConnectorContext())
    connector.start(props)
    configs = [dict(c) for c in connector.task_configs(max_tasks)]
    connector.stop()
    return configs


def start_task(
    props: dict[str, str], store: FakeOffsetStore | None = None, clock: FakeClock | None = None
) -> DatagenTask:
    clock = clock or FakeClock()
    task = DatagenTask(clock=clock, sleep=clock.sleep)
    task.initialize(FakeSourceTaskContext(props, store))
    task.start(props)
    return task


def run(task: DatagenTask, polls: int = 100) -> list[SourceRecord]:
    records: list[SourceRecord] = []
    for _ in range(polls):
        records.extend(task.poll() or [])
    return records


def summary(records: list[SourceRecord]) -> list[tuple[Any, ...]]:
    return [(r.source_offset["iteration"], r.key, r.value) for r in records]  # type: ignore[index]


def test_the_same_seed_gives_the_same_records_in_every_run() -> None:
    (props,) = task_configs(seed=7, iterations=50)
    first, second = run(start_task(props)), run(start_task(props))
    assert len(first) == 50
    assert summary(first) == summary(second)
    (other_seed,) = task_configs(seed=8, iterations=50)
    assert [r.value for r in run(start_task(other_seed))] != [r.value for r in first]


@pytest.mark.parametrize("quickstart", sorted(QUICKSTARTS))
def test_any_task_split_gives_the_same_records(quickstart: str) -> None:
    (single,) = task_configs(quickstart=quickstart, seed=3, iterations=40)
    expected = summary(run(start_task(single)))
    split = []
    for props in task_configs(3, quickstart=quickstart, seed=3, iterations=40):
        records = run(start_task(props))
        index = int(props["datagen.task.index"])
        assert all(r.source_partition == {"task": index} for r in records)
        split.extend(summary(records))
    assert sorted(split, key=lambda s: s[0]) == expected


@pytest.mark.parametrize("quickstart", sorted(QUICKSTARTS))
def test_records_are_valid_for_their_schemas(quickstart: str) -> None:
    (props,) = task_configs(quickstart=quickstart, iterations=200)
    spec = QUICKSTARTS[quickstart]
    records = run(start_task(props))
    assert len(records) == 200
    for record in records:
        assert record.value_schema is spec.value_schema
        assert record.key_schema == spec.key_schema
        record.value.validate()
        validate_value(record.value_schema, record.value)
        validate_value(record.key_schema, record.key)
        assert record.key == record.value.get(spec.key_field)
    # Realistic, not constant: keys vary.
    assert len({r.key for r in records}) > 5


@pytest.mark.parametrize("key", ["iterations", "max.records"])
def test_the_record_count_limit_holds_across_tasks(key: str) -> None:
    configs = task_configs(4, **{key: 10})
    totals = [len(run(start_task(props))) for props in configs]
    assert sum(totals) == 10
    assert totals == [3, 3, 2, 2]


def test_fewer_records_than_tasks_runs_fewer_tasks() -> None:
    assert len(task_configs(8, iterations=3)) == 3
    assert len(task_configs(8)) == 8


def test_resumes_after_the_stored_offset() -> None:
    configs = task_configs(2, seed=5, iterations=40)
    whole = {i: summary(run(start_task(p))) for i, p in enumerate(configs)}
    store = FakeOffsetStore()
    first_run = start_task(configs[1], store)
    emitted = (first_run.poll() or [])[:7]
    store.commit(emitted)
    first_run.stop()

    resumed = summary(run(start_task(configs[1], store)))
    assert summary(emitted) + resumed == whole[1]
    assert resumed[0][0] == emitted[-1].source_offset["iteration"] + 2  # type: ignore[index]


def test_a_corrupt_stored_offset_fails_start() -> None:
    (props,) = task_configs()
    store = FakeOffsetStore()
    store.put({"task": 0}, {"iteration": "seven"})
    with pytest.raises(ConnectError, match="not a record number"):
        start_task(props, store)


@pytest.mark.parametrize(
    ("config", "tasks", "per_task_rate"),
    [({"rate": 10}, 1, 10), ({"rate": 20}, 2, 10), ({"max.interval": 100}, 1, 10)],
)
def test_the_rate_limit_is_honoured(config: dict[str, Any], tasks: int, per_task_rate: int) -> None:
    for props in task_configs(tasks, **config):
        clock = FakeClock()
        task = start_task(props, clock=clock)
        produced = 0
        for _ in range(10_000):
            if clock.now >= 5.0:
                break
            produced += len(task.poll() or [])
        else:
            raise AssertionError("the fake clock never reached 5 s")
        # Record k is due at k / rate: those due at 0 .. 5 s inclusive.
        assert 5 * per_task_rate <= produced <= 5 * per_task_rate + 1


def test_a_stall_does_not_burst_more_than_a_second_of_records() -> None:
    (props,) = task_configs(rate=10)
    clock = FakeClock()
    task = start_task(props, clock=clock)
    assert len(task.poll() or []) == 1
    clock.now = 60.0
    assert len(task.poll() or []) == 10


def test_without_a_limit_polls_are_full_batches() -> None:
    (props,) = task_configs()
    task = start_task(props)
    assert [len(task.poll() or []) for _ in range(3)] == [1000, 1000, 1000]


def test_stop_wakes_a_poll_waiting_for_the_next_record() -> None:
    (props,) = task_configs(**{"max.interval": 600_000})
    task = DatagenTask()
    task.initialize(FakeSourceTaskContext(props))
    task.start(props)
    assert len(task.poll() or []) == 1
    result: list[object] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    task.stop()
    poller.join(timeout=10)
    assert not poller.is_alive()
    assert result == [None]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"kafka.topic": "t"}, "quickstart"),
        ({"kafka.topic": "t", "quickstart": "clicks"}, "quickstart"),
        ({"kafka.topic": "t", "quickstart": "users", "schema": "orders"}, "schema"),
        ({"kafka.topic": "t", "schema": "users", "rate": "5", "max.interval": "10"}, "rate"),
        ({"kafka.topic": "t", "schema": "users", "max.records": "-2"}, "max.records"),
        ({"quickstart": "users"}, "kafka.topic"),
    ],
)
def test_bad_configs_name_the_key(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        DatagenConnector().start(config)


def test_alter_offsets_checks_their_shape() -> None:
    connector = DatagenConnector()
    assert connector.alter_offsets({}, [({"task": 0}, {"iteration": 9}), ({"task": 1}, None)])
    with pytest.raises(ConnectError):
        connector.alter_offsets({}, [({"filename": "x"}, {"iteration": 1})])
    with pytest.raises(ConnectError):
        connector.alter_offsets({}, [({"task": 0}, {"iteration": -1})])


def test_record_random_is_reproducible_bounded_and_spread():
    from connectors.datagen.quickstarts import RecordRandom

    def draws(seed: int, n: int) -> list[int]:
        rng = RecordRandom(seed, n)
        return [rng.randint(1, 6) for _ in range(20)] + [rng.randint(0, 2**40)]

    assert draws(7, 3) == draws(7, 3)
    assert draws(7, 3) != draws(7, 4) and draws(7, 3) != draws(8, 3)
    counts = [0] * 7
    for n in range(3000):
        for value in draws(1, n)[:20]:
            counts[value] += 1
    assert counts[0] == 0 and all(9000 < c < 11000 for c in counts[1:]), counts
    rng = RecordRandom(1, 1)
    assert all(0.1 <= rng.uniform(0.1, 10.0) < 10.0 for _ in range(1000))
    assert {rng.choice("ab") for _ in range(100)} == {"a", "b"}
