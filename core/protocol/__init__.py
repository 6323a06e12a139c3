"""The Kafka wire protocol, sans I/O: framing, request headers, API versions, error codes.

Message bodies are encoded and decoded with kafka-python's schema-driven ``kafka.protocol``
classes (generated from Kafka's own JSON message definitions); record batches stay opaque
bytes here and are handled by ``core.log.records`` in the broker.
"""
