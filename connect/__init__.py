"""Kafka-Connect-compatible integration framework; built on ``core.backends`` (later issue)."""
