"""The S3 sink connector: Kafka topics into objects of S3 or an S3-compatible store, with
Confluent's ``S3SinkConnector`` config, formats, partitioners and object layout, and
exactly-once objects for deterministic rotation (docs/s3-sink.md)."""
