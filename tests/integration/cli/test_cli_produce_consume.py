"""``ferry produce`` and ``ferry consume``: round trips, output format and bad input."""

from __future__ import annotations

import subprocess

import pytest
from cli_helpers import COMMAND_TIMEOUT_S, Ferry, assert_one_error_line

pytestmark = pytest.mark.integration

#: Enough for every bounded consume below to see the records produced before it started.
IDLE_MS = "500"


def consume(ferry: Ferry, topic: str, *args: str) -> tuple[list[bytes], bytes]:
    """Run a bounded consume; return its output lines and its stderr."""
    result = ferry.run("consume", topic, *args)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    # Split on \n only: values may contain \r, which splitlines() would treat as a break.
    lines = result.stdout.split(b"\n")
    assert lines.pop() == b"", "output must end with a newline"
    return lines, result.stderr


def test_round_trip_with_keys_headers_and_every_field(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "orders", "--partitions", "2")
    ferry.ok("produce", "orders", "--key-separator", ":", "--header", "source=cli",
             "--header", "trace=a=b", "--partition", "1", input=b"k1:v1\nk2:v:2\n:empty-key\n")
    lines, stderr = consume(ferry, "orders", "--from-beginning", "--timeout-ms", IDLE_MS,
                            "--print-timestamp", "--print-partition", "--print-offset",
                            "--print-headers", "--print-key", "--key-separator", "=>")
    assert stderr.endswith(b"Processed a total of 3 messages\n")
    assert len(lines) == 3
    for offset, (line, key, value) in enumerate(
        zip(lines, [b"k1", b"k2", b""], [b"v1", b"v:2", b"empty-key"], strict=True)
    ):
        timestamp, partition, offset_field, headers, key_value = line.split(b"\t")
        assert timestamp.startswith(b"CreateTime:") and int(timestamp[11:]) > 0
        assert partition == b"Partition:1"
        assert offset_field == b"Offset:%d" % offset
        assert headers == b"source:cli,trace:a=b"
        assert key_value == key + b"=>" + value


def test_values_are_bytes_and_defaults_print_only_values(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "raw")
    payload = [b"plain", b"", b"tab\there", b"\x00\xff\xfe binary", b"crlf\r", b"last"]
    # The last line has no newline: it is still a record.
    ferry.ok("produce", "raw", input=b"\n".join(payload))
    lines, _ = consume(ferry, "raw", "--from-beginning", "--timeout-ms", IDLE_MS)
    assert lines == payload
    lines, _ = consume(ferry, "raw", "--from-beginning", "--timeout-ms", IDLE_MS,
                       "--print-key", "--print-headers")
    assert lines[0] == b"NO_HEADERS\tnull\tplain"


def test_keys_choose_partitions_and_partition_offset_select(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "keyed", "--partitions", "3")
    lines = b"".join(b"user-%d,%d\n" % (i % 4, i) for i in range(40))
    ferry.ok("produce", "keyed", "--key-separator", ",", input=lines)
    out, _ = consume(ferry, "keyed", "--from-beginning", "--timeout-ms", IDLE_MS,
                     "--print-partition", "--print-key")
    assert len(out) == 40
    partition_of: dict[bytes, bytes] = {}
    for line in out:
        partition, key, _value = line.split(b"\t")
        # Every record of a key lands in the same partition.
        assert partition_of.setdefault(key, partition) == partition

    # --partition P --offset O: only that partition, from that offset on.
    partition = next(iter(partition_of.values())).split(b":")[1].decode()
    in_partition = [line for line in out if line.startswith(b"Partition:%s\t" % partition.encode())]
    out, _ = consume(ferry, "keyed", "--partition", partition, "--offset", "2",
                     "--timeout-ms", IDLE_MS, "--print-partition", "--print-key")
    assert out == in_partition[2:]
    out, _ = consume(ferry, "keyed", "--partition", partition, "--offset", "earliest",
                     "--timeout-ms", IDLE_MS, "--print-partition", "--print-key")
    assert out == in_partition
    out, stderr = consume(ferry, "keyed", "--partition", partition, "--offset", "latest",
                          "--timeout-ms", "300")
    assert out == [] and b"Processed a total of 0 messages" in stderr


def test_max_messages_and_timeout(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "ten")
    ferry.ok("produce", "ten", input=b"".join(b"%d\n" % i for i in range(10)))
    out, stderr = consume(ferry, "ten", "--from-beginning", "--max-messages", "4")
    assert out == [b"0", b"1", b"2", b"3"]
    assert stderr.endswith(b"Processed a total of 4 messages\n")
    # Without --from-beginning a new reader starts at the end: nothing, exits on timeout.
    out, stderr = consume(ferry, "ten", "--timeout-ms", "300")
    assert out == [] and stderr.endswith(b"Processed a total of 0 messages\n")


def test_group_continues_where_it_stopped(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "jobs", "--partitions", "2")
    ferry.ok("produce", "jobs", "--partition", "0", input=b"a\nb\nc\nd\ne\nf\n")
    ferry.ok("produce", "jobs", "--partition", "1", input=b"g\nh\n")
    first, _ = consume(ferry, "jobs", "--group", "workers", "--from-beginning",
                       "--max-messages", "5", "--timeout-ms", IDLE_MS)
    second, _ = consume(ferry, "jobs", "--group", "workers", "--from-beginning",
                        "--timeout-ms", IDLE_MS)
    assert len(first) == 5
    # Nothing lost, nothing repeated: the commit covered exactly what was printed.
    assert sorted(first + second) == [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"]

    assert ferry.ok("groups", "list").split() == [b"workers"]
    ferry.ok("produce", "jobs", "--partition", "0", input=b"late\n")
    text = ferry.ok("groups", "describe", "workers").decode()
    assert "State:      Empty" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("workers ")]
    assert rows == [
        ["workers", "jobs", "0", "6", "7", "1", "-", "-", "-"],
        ["workers", "jobs", "1", "2", "2", "0", "-", "-", "-"],
    ]
    assert_one_error_line(ferry.run("groups", "describe", "nobody"), "nobody")


def test_produce_stops_at_a_line_without_key_separator(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "t")
    result = ferry.run("produce", "t", "--key-separator", ":", input=b"a:1\nb:2\nbroken\nc:3\n")
    assert_one_error_line(result, "line 3", "':'")
    out, _ = consume(ferry, "t", "--from-beginning", "--timeout-ms", IDLE_MS, "--print-key")
    assert out == [b"a\t1", b"b\t2"]


#: (arguments, fragments the error line must contain); topic "t" has partitions 0 and 1.
BAD_INPUT: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (("produce", "missing"), ("missing",)),
    (("produce", "t", "--partition", "2"), ("partition 2",)),
    (("produce", "t", "--header", "nokey"), ("--header", "nokey")),
    (("consume", "missing", "--timeout-ms", "100"), ("missing",)),
    (("consume", "t", "--partition", "5"), ("partition 5",)),
    (("consume", "t", "--partition", "0", "--offset", "soon"), ("--offset", "soon")),
    (("consume", "t", "--partition", "0", "--offset", "-3"), ("--offset", "-3")),
    (("consume", "t", "--offset", "1"), ("--partition",)),
    (("consume", "t", "--group", "g", "--partition", "0"), ("--group",)),
]


def test_bad_produce_and_consume_input(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "t", "--partitions", "2")
    for args, fragments in BAD_INPUT:
        assert_one_error_line(ferry.run(*args, input=b"x\n"), *fragments)
    # Nothing was produced by the failed commands.
    described = ferry.ok("topics", "describe", "t").decode()
    assert described.count("HighWatermark: 0") == 2


def test_large_input_is_batched(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "big", "--partitions", "4")
    count = 100_000
    ferry.ok("produce", "big", input=b"".join(b"record-%d\n" % i for i in range(count)))
    described = ferry.ok("topics", "describe", "big").decode()
    high_watermarks = [int(part.split("HighWatermark: ")[1].split("\t")[0])
                       for part in described.splitlines()[1:]]
    assert sum(high_watermarks) == count


def test_consume_into_a_closed_pipe_is_quiet(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "many")
    # Far more output than a pipe buffers, so the consumer must notice the reader leave.
    ferry.ok("produce", "many", input=b"".join(b"%030d\n" % i for i in range(50_000)))
    consumer = ferry.start("consume", "many", "--from-beginning")
    assert consumer.stdout is not None and consumer.stderr is not None
    head = subprocess.run(["head", "-n", "3"], stdin=consumer.stdout, capture_output=True,
                          timeout=COMMAND_TIMEOUT_S, check=False)
    consumer.stdout.close()  # the consumer's stdout now has no reader at all
    assert head.stdout.splitlines() == [b"%030d" % i for i in range(3)]
    # Follow mode without limits: only the closed pipe can end it.
    assert consumer.wait(timeout=COMMAND_TIMEOUT_S) == 0
    stderr = consumer.stderr.read()
    assert b"Traceback" not in stderr and b"Exception ignored" not in stderr
    assert b"Processed a total of" in stderr
