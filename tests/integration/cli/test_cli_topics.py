"""``ferry topics`` and the global options (--log, FERRY_LOG, --version), via subprocess."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from cli_helpers import Ferry, assert_one_error_line

pytestmark = pytest.mark.integration


def test_topic_lifecycle(ferry: Ferry) -> None:
    out = ferry.ok("topics", "create", "orders", "--partitions", "3",
                   "--config", "retention.ms=86400000", "--config", "cleanup.policy=delete")
    assert out == b"Created topic orders.\n"
    ferry.ok("topics", "create", "payments")
    # --if-not-exists succeeds quietly and changes nothing.
    assert ferry.ok("topics", "create", "orders", "--partitions", "1", "--if-not-exists") == b""

    assert ferry.ok("topics", "list", "--exclude-internal").split() == [b"orders", b"payments"]

    lines = ferry.ok("topics", "describe", "orders", "--interval", "0").decode().splitlines()
    assert lines[0].startswith("Topic: orders\tTopicId: ")
    assert "PartitionCount: 3\tReplicationFactor: 1\tSize: 0\t" in lines[0]
    assert lines[0].endswith("Configs: cleanup.policy=delete,retention.ms=86400000")
    assert len(lines) == 4
    for partition, line in enumerate(lines[1:]):
        assert line == (f"\tTopic: orders\tPartition: {partition}\tLeader: {_leader(line)}\t"
                        f"Replicas: {_leader(line)}\tIsr: {_leader(line)}\t"
                        "LogStartOffset: 0\tHighWatermark: 0\tSize: 0")

    out = ferry.ok("topics", "alter", "orders", "--config", "retention.bytes=1048576",
                   "--delete-config", "retention.ms")
    assert out == b"Updated configs of topic orders.\n"
    header = ferry.ok("topics", "describe", "orders", "--interval", "0").decode().splitlines()[0]
    assert header.endswith("Configs: cleanup.policy=delete,retention.bytes=1048576")

    # Without a name, describe shows every topic.
    described = ferry.ok("topics", "describe").decode()
    assert "Topic: orders\t" in described and "Topic: payments\t" in described

    assert ferry.ok("topics", "delete", "payments") == b"Deleted topic payments.\n"
    assert ferry.ok("topics", "list", "--exclude-internal").split() == [b"orders"]


def _leader(line: str) -> str:
    return line.split("Leader: ")[1].split("\t")[0]


#: (arguments, fragments the error line must contain); "orders" exists beforehand.
TOPIC_ERRORS: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (("topics", "create", "orders"), ("orders",)),
    (("topics", "create", "t2", "--config", "retention.ms=soon"), ("retention.ms",)),
    (("topics", "create", "t2", "--config", "no.such.config=1"), ("no.such.config",)),
    (("topics", "create", "t2", "--config", "retention.ms"), ("--config", "retention.ms")),
    (("topics", "create", "t2", "--partitions", "0"), ()),
    (("topics", "create", "bad/name"), ("bad/name",)),
    (("topics", "describe", "missing"), ("missing",)),
    (("topics", "describe", "orders", "--interval", "soon"), ("--interval", "soon")),
    (("topics", "delete", "missing"), ("missing",)),
    (("topics", "alter", "missing", "--config", "retention.ms=1"), ("missing",)),
    (("topics", "alter", "orders", "--config", "segment.bytes=-5"), ("segment.bytes",)),
    (("topics", "alter", "orders"), ("--config",)),
]


def test_topic_errors_are_one_line(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "orders")
    for args, fragments in TOPIC_ERRORS:
        assert_one_error_line(ferry.run(*args), *fragments)
    # None of the failed creates left a topic behind.
    assert ferry.ok("topics", "list", "--exclude-internal").split() == [b"orders"]


def test_log_url_from_flag_before_or_after_command_and_from_env(ferry: Ferry) -> None:
    before = ferry.run("--log", ferry.log_url, "topics", "create", "a", log=False)
    assert before.returncode == 0, before.stderr
    after = ferry.run("topics", "create", "b", "--log", ferry.log_url, log=False)
    assert after.returncode == 0, after.stderr
    from_env = ferry.run("topics", "list", "--exclude-internal", log=False,
                         env={"FERRY_LOG": ferry.log_url})
    assert from_env.stdout.split() == [b"a", b"b"]
    # The flag wins over the environment.
    other = f"embedded:{ferry.tmp_path / 'other'}"
    ferry.ok("--log", other, "topics", "create", "o")
    flagged = ferry.run("topics", "list", "--exclude-internal", "--log", other, log=False,
                        env={"FERRY_LOG": ferry.log_url})
    assert flagged.returncode == 0 and flagged.stdout == b"o\n"
    # Neither: ./ferry-data in the working directory.
    default = ferry.run("topics", "create", "c", log=False)
    assert default.returncode == 0, default.stderr
    assert (ferry.tmp_path / "ferry-data").is_dir()


@pytest.mark.parametrize(
    ("url", "fragments"),
    [
        ("no-scheme-here", ("no-scheme-here",)),
        ("nosuch://host:1", ("nosuch",)),
        ("embedded:", ("embedded:",)),
    ],
)
def test_bad_log_url(ferry: Ferry, url: str, fragments: tuple[str, ...]) -> None:
    assert_one_error_line(ferry.run("topics", "list", "--log", url, log=False), *fragments)


def test_unusable_data_dir(ferry: Ferry) -> None:
    not_a_dir = ferry.tmp_path / "file"
    not_a_dir.write_text("x")
    result = ferry.run("topics", "list", "--log", f"embedded:{not_a_dir}", log=False)
    assert_one_error_line(result, str(not_a_dir))


def test_version_and_usage_errors(ferry: Ferry) -> None:
    result = ferry.run("--version", log=False)
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"ferry {version('ferryman')}"
    for args in (("frobnicate",), ("topics",), ("topics", "create"), ()):
        result = ferry.run(*args, log=False)
        assert result.returncode == 2, args
        assert b"usage: ferry" in result.stderr and b"Traceback" not in result.stderr
