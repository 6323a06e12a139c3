"""The S3 sink's config: Confluent's names and defaults, class names in both forms,
errors naming the key, the secret kept out of text."""

from __future__ import annotations

import pytest

from connect.api import ConfigError, Password
from connectors.s3.config import CONFIG_DEF, S3SinkSettings
from connectors.s3.connector import S3SinkConnector
from connectors.s3.formats import format_for

BASE = {"s3.bucket.name": "b", "flush.size": "3",
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat"}


def test_confluent_defaults() -> None:
    s = S3SinkSettings.parse(BASE)
    assert (s.region, s.topics_dir, s.directory_delim, s.file_delim) == \
        ("us-west-2", "topics", "/", "+")
    assert (s.rotate_interval_ms, s.rotate_schedule_interval_ms) == (-1, -1)
    assert s.part_size == 25 * 1024 * 1024 and s.path_style is True
    assert (s.compression, s.null_values, s.schema_compatibility) == ("none", "fail", "NONE")
    assert (s.part_retries, s.s3_retry_backoff_ms, s.retry_backoff_ms) == (3, 200, 5000)
    assert (s.zero_pad_width, s.timestamp_extractor, s.partitioner) == \
        (10, "Wallclock", "io.confluent.connect.storage.partitioner.DefaultPartitioner")
    assert s.format == "JsonFormat" and s.recovery_from_storage is False
    # The AWS SDK for Java's defaults, which Confluent's connector runs with.
    assert (s.connect_timeout_ms, s.read_timeout_ms) == (10_000, 50_000)
    assert CONFIG_DEF.config_keys["aws.secret.access.key"].type.value == "PASSWORD"


@pytest.mark.parametrize("fmt, extra, ext", [
    ("JsonFormat", {}, ".json"),
    ("JsonFormat", {"s3.compression.type": "gzip"}, ".json.gz"),
    ("io.confluent.connect.s3.format.avro.AvroFormat", {}, ".avro"),
    ("ParquetFormat", {}, ".snappy.parquet"),
    ("ParquetFormat", {"parquet.codec": "none"}, ".parquet"),
    ("ByteArrayFormat", {}, ".bin"),
])
def test_extensions(fmt: str, extra: dict, ext: str) -> None:
    assert format_for(S3SinkSettings.parse({**BASE, "format.class": fmt, **extra})).extension \
        == ext


@pytest.mark.parametrize("props, key", [
    ({"flush.size": "0"}, "flush.size"),
    ({"format.class": "CsvFormat"}, "format.class"),
    ({"s3.part.size": "1024"}, "s3.part.size"),
    ({"behavior.on.null.values": "drop"}, "behavior.on.null.values"),
    ({"format.class": "AvroFormat", "s3.compression.type": "gzip"}, "s3.compression.type"),
    ({"rotate.schedule.interval.ms": "60000"}, "timezone"),
    ({"timestamp.extractor": "Sundial"}, "timestamp.extractor"),
    ({"store.kafka.keys": "true"}, "store.kafka.keys"),
    ({"s3.read.timeout.ms": "0"}, "s3.read.timeout.ms"),
    ({"s3.connect.timeout.ms": "soon"}, "s3.connect.timeout.ms"),
])
def test_errors_name_the_key(props: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        S3SinkSettings.parse({**BASE, **props})
    assert err.value.name == key


def test_required_keys_and_the_secret_in_validate() -> None:
    result = S3SinkConnector().validate({"aws.secret.access.key": "s3cr3t"})
    errors = {v.name: v.errors for v in result.config_values if v.errors}
    assert set(errors) == {"s3.bucket.name", "flush.size", "format.class"}
    secret = next(v for v in result.config_values if v.name == "aws.secret.access.key")
    assert isinstance(secret.value, Password) and "s3cr3t" not in repr(result)


def test_a_malformed_endpoint_is_an_error_on_store_url() -> None:
    """Refused before any request: no S3 endpoint is needed for this check."""
    result = S3SinkConnector().validate({**BASE, "store.url": "http://exa mple:1:2"})
    errors = {v.name: v.errors for v in result.config_values if v.errors}
    assert list(errors) == ["store.url"] and "Invalid endpoint" in errors["store.url"][0]


def test_timeouts_reach_the_s3_client() -> None:
    from connectors.s3.storage import S3Storage

    storage = S3Storage(S3SinkSettings.parse({**BASE, "s3.region": "us-east-1",
                                              "s3.connect.timeout.ms": "1500",
                                              "s3.read.timeout.ms": "250"}))
    try:
        config = storage.client.meta.config
        assert (config.connect_timeout, config.read_timeout) == (1.5, 0.25)
    finally:
        storage.close()
