"""One module per Kafka API; each registers itself with ``core.broker.registry.handles``."""
