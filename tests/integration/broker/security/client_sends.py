"""One record sent and acknowledged through kafka-python's or aiokafka's producer, with
the security settings a test gives: the secured-listener suites check each client logs
in this way."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["aiokafka_send", "kafka_python_send"]


def kafka_python_send(topic: str, value: bytes = b"v", **config: Any) -> None:
    """``config``: ``KafkaProducer``'s keyword arguments."""
    from kafka import KafkaProducer

    producer = KafkaProducer(**config)
    try:
        producer.send(topic, value).get(timeout=20)
    finally:
        producer.close()


def aiokafka_send(topic: str, value: bytes = b"v", **config: Any) -> None:
    """``config``: ``AIOKafkaProducer``'s keyword arguments."""
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()

    asyncio.run(run())
