"""The Confluent wire format, subject name strategies, and the serde package's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from schema_registry.serde import (
    RecordNameStrategy,
    SerializationError,
    TopicNameStrategy,
    TopicRecordNameStrategy,
    frame,
    resolve_strategy,
    unframe,
)
from schema_registry.serde.wire import header

ROOT = Path(__file__).resolve().parents[3]


def test_frame_is_magic_zero_then_big_endian_id():
    assert frame(1, b"x") == b"\x00\x00\x00\x00\x01x"
    assert frame(0x01020304, b"") == b"\x00\x01\x02\x03\x04"
    assert header(2**32 - 1) == b"\x00\xff\xff\xff\xff"


def test_unframe_returns_id_and_payload_view():
    schema_id, payload = unframe(b"\x00\x00\x00\x01\x00abc")
    assert schema_id == 256
    assert isinstance(payload, memoryview)
    assert bytes(payload) == b"abc"
    assert bytes(unframe(bytearray(b"\x00\x00\x00\x00\x07"))[1]) == b""


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x01"])
def test_short_frames_are_refused_with_their_length(data):
    with pytest.raises(SerializationError, match=f"has {len(data)}"):
        unframe(data)


def test_unknown_magic_bytes_are_refused():
    with pytest.raises(SerializationError, match="Unknown magic byte 0x7b"):
        unframe(b'{"a":1}')
    with pytest.raises(SerializationError, match=r"magic byte 1 .*GUID"):
        unframe(b"\x01" + bytes(16))


@pytest.mark.parametrize("schema_id", [-1, 2**32])
def test_ids_outside_four_unsigned_bytes_are_refused(schema_id):
    with pytest.raises(SerializationError):
        frame(schema_id, b"")


def test_topic_name_strategy():
    strategy = TopicNameStrategy()
    assert strategy.subject_name("orders", False, "com.x.Order") == "orders-value"
    assert strategy.subject_name("orders", True, None) == "orders-key"


def test_record_strategies_need_a_record_name():
    assert RecordNameStrategy().subject_name("t", False, "com.x.Order") == "com.x.Order"
    assert TopicRecordNameStrategy().subject_name("t", True, "com.x.Order") == "t-com.x.Order"
    for strategy in (RecordNameStrategy(), TopicRecordNameStrategy()):
        with pytest.raises(SerializationError, match="needs a named schema"):
            strategy.subject_name("t", False, None)


@pytest.mark.parametrize("name, expected", [
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", TopicNameStrategy),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", RecordNameStrategy),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
     TopicRecordNameStrategy),
    ("RecordNameStrategy", RecordNameStrategy),
    (" TopicNameStrategy ", TopicNameStrategy),
    ("schema_registry.serde.strategies:TopicRecordNameStrategy", TopicRecordNameStrategy),
    ("schema_registry.serde.strategies.RecordNameStrategy", RecordNameStrategy),
])
def test_strategies_resolve_by_confluent_simple_and_python_names(name, expected):
    assert type(resolve_strategy(name)) is expected


@pytest.mark.parametrize("name", ["", "NoSuchStrategy", "io.confluent.Other",
                                  "schema_registry.serde.wire:frame", "json:loads"])
def test_unknown_strategies_are_refused_naming_the_choices(name):
    with pytest.raises(ValueError, match="TopicNameStrategy, RecordNameStrategy"):
        resolve_strategy(name)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_serde_uses_only_the_schema_model_of_the_registry():
    # test_layering lets schema_registry.serde import "schema_registry"; this pins it to
    # the pure schema model, never the server (registry, store, rest ...).
    offenders = []
    for path in sorted((ROOT / "schema_registry" / "serde").rglob("*.py")):
        for module in _imports(path):
            if module.startswith("schema_registry.") and not module.startswith(
                    ("schema_registry.serde", "schema_registry.schemas")):
                offenders.append(f"{path.name} imports {module}")
            if module.split(".")[0] == "core" or (
                    module.startswith("connect.") and not module.startswith("connect.api")):
                offenders.append(f"{path.name} imports {module}")
    assert offenders == []
