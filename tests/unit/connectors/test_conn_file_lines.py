"""LineSplitter: Kafka's line-ending rules over bytes arriving in arbitrary chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from connectors.file.lines import LineSplitter


def drain(splitter: LineSplitter) -> list[tuple[bytes, int]]:
    out = []
    while (found := splitter.next_line()) is not None:
        out.append(found)
    return out


def test_each_terminator_ends_a_line() -> None:
    splitter = LineSplitter()
    splitter.feed(b"a\nb\r\nc\rd")
    assert drain(splitter) == [(b"a", 2), (b"b", 3), (b"c", 2)]
    assert splitter.pending == 1
    assert splitter.take_rest() == b"d"


def test_a_trailing_carriage_return_waits_for_the_next_byte() -> None:
    splitter = LineSplitter()
    splitter.feed(b"a\r")
    assert splitter.next_line() is None
    splitter.feed(b"\n")
    assert drain(splitter) == [(b"a", 3)]
    splitter.feed(b"b\r")
    splitter.feed(b"c")
    assert drain(splitter) == [(b"b", 2)]


@given(
    lines=st.lists(st.binary().map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))),
    ends=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=64, max_size=64),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
)
def test_chunking_never_changes_lines_or_consumed_bytes(
    lines: list[bytes], ends: list[bytes], cuts: list[int]
) -> None:
    # "\r" then an empty line ending in "\n" reads as one "\r\n" (in Kafka too), and a
    # final "\r" waits for its next byte: avoid both so the expected lines are unambiguous.
    terminators = [ends[i % 64] for i in range(len(lines))]
    for i in range(len(lines)):
        next_is_empty_lf = i + 1 < len(lines) and not lines[i + 1]
        if terminators[i] == b"\r" and (next_is_empty_lf or i + 1 == len(lines)):
            terminators[i] = b"\n"
        if not lines[i]:
            terminators[i] = b"\n"
    terminated = [line + end for line, end in zip(lines, terminators, strict=True)]
    data = b"".join(terminated)
    splitter = LineSplitter()
    got: list[tuple[bytes, int]] = []
    previous = 0
    for cut in [*sorted(c for c in cuts if c < len(data)), len(data)]:
        splitter.feed(data[previous:cut])
        previous = cut
        got.extend(drain(splitter))
    expected = [(line, len(t)) for line, t in zip(lines, terminated, strict=True)]
    assert got == expected
    assert sum(n for _, n in got) == len(data)
