"""The Kafka-protocol broker: serves core.log and core.group to unmodified Kafka clients."""
