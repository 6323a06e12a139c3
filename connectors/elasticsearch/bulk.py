"""Bulk writing: actions batched by count (``batch.size``) and bytes
(``bulk.size.bytes``), up to ``max.in.flight.requests`` requests at once, failed items
classified and retried, and each record's ``OffsetState`` completed only when its item
is indexed, ignored on purpose or handed to the dead letter queue.

Threads: ``add``, ``send_partial``, ``flush`` and ``drain_reports`` run on the task's
thread; requests run on a pool of ``max.in.flight.requests`` threads. Items to report to
the DLQ are queued by the pool and reported by the task's thread (the reporter must be
called there).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from connect.api import ConnectError, ErrantRecordReporter
from connectors.elasticsearch.client import EsClient, backoff_s, is_retriable
from connectors.elasticsearch.config import BEHAVIOR_ON_MALFORMED_DOCS, EsSinkConfig
from connectors.elasticsearch.documents import BulkAction
from connectors.elasticsearch.offsets import OffsetState

__all__ = ["BulkWriter", "IndexingError"]

log = logging.getLogger(__name__)

#: Item errors caused by the document itself (Confluent's list, with PR #748's addition).
MALFORMED = ("mapper_parsing_exception", "illegal_argument_exception",
             "action_request_validation_exception", "document_parsing_exception",
             "strict_dynamic_mapping_exception")
VERSION_CONFLICT = "version_conflict_engine_exception"
_FIELD_RE = re.compile(r"failed to parse field \[([^\]]+)\] of type \[([^\]]+)\]")


class IndexingError(ConnectError):
    """A bulk item failed in a way that must stop the task."""


@dataclass(slots=True)
class _Item:
    action: BulkAction
    state: OffsetState


class BulkWriter:
    def __init__(self, client: EsClient, config: EsSinkConfig,
                 reporter: ErrantRecordReporter | None, stopping: threading.Event) -> None:
        self._client = client
        self._config = config
        self._reporter = reporter
        self._pool = ThreadPoolExecutor(config.max_in_flight, thread_name_prefix="es-bulk")
        self._batch: list[_Item] = []
        self._batch_bytes = 0
        self._batch_started = 0.0
        self._cond = threading.Condition()
        self._buffered = 0  # records in the open batch or in flight
        self._in_flight: list[tuple[Future[None], frozenset[tuple[str, str]]]] = []
        self._error: BaseException | None = None
        self._to_report: deque[tuple[_Item, str]] = deque()
        self._reports: list[Future[None]] = []
        self.stopping = stopping  # set by the task's stop(): retries give up at once
        # Requests allowed in flight: max.in.flight.requests, halved when the server is
        # overloaded (a timeout or 429), grown back by one per clean request (AIMD), so a
        # slow server is not sent work it will only time out on and get again.
        self._slots = config.max_in_flight
        self._overloads = 0
        self._clean = 0  # clean requests since the limit last grew

    # -- task thread ----------------------------------------------------------------
    def check(self) -> None:
        """Raise the first fatal error a request met (fails the task)."""
        if self._error is not None:
            raise self._error

    def add(self, action: BulkAction, state: OffsetState) -> None:
        self.check()
        limit = self._config.max_buffered_records
        deadline = time.monotonic() + self._config.flush_timeout_ms / 1000
        with self._cond:
            while self._buffered >= limit and self._error is None:
                self._wait_until(deadline)
            self._buffered += 1
        self.check()
        max_bytes = self._config.bulk_size_bytes
        if self._batch and max_bytes > 0 and self._batch_bytes + action.size > max_bytes:
            self._submit()
        if not self._batch:
            self._batch_started = time.monotonic()
        self._batch.append(_Item(action, state))
        self._batch_bytes += action.size
        if len(self._batch) >= self._config.batch_size:
            self._submit()

    def send_partial(self, force: bool = False) -> None:
        """Send the open batch if it is older than ``linger.ms`` and a request slot is
        free (or ``force``). While every slot is busy the batch keeps growing (up to
        ``batch.size``/``bulk.size.bytes``): a busy server gets fewer, larger requests
        instead of a queue of small ones that time out waiting."""
        if not self._batch:
            return
        if not force:
            if (time.monotonic() - self._batch_started) * 1000 < self._config.linger_ms:
                return
            with self._cond:
                if len(self._in_flight) >= self._slots:
                    return
        self._submit()

    def flush(self, timeout_s: float) -> None:
        """Send everything and wait until no request is in flight."""
        self.send_partial(force=True)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._in_flight and self._error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConnectError(
                        f"Flush timeout expired with unflushed records: {self._buffered} "
                        f"(flush.timeout.ms={self._config.flush_timeout_ms})")
                self._cond.wait(min(left, 0.5))
        self.drain_reports()
        self.check()

    def drain_reports(self) -> None:
        """Hand queued failed items to the DLQ; each record's offset completes when its
        report is written."""
        while self._to_report:
            item, message = self._to_report.popleft()
            if self._reporter is None:
                item.state.done()
                continue
            future = self._reporter.report(item.action.record, IndexingError(message))
            future.add_done_callback(lambda _f, s=item.state: s.done())
            self._reports.append(future)
        self._reports = [f for f in self._reports if not f.done()]

    def close(self) -> None:
        self.stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self) -> None:
        batch, self._batch, self._batch_bytes = self._batch, [], 0
        # Without external versions the server keeps whatever arrives last, so a batch
        # that touches a document still in flight waits for that request (order per id).
        keys = frozenset((i.action.index, i.action.id) for i in batch
                         if not i.action.external and i.action.id is not None)
        deadline = time.monotonic() + self._config.flush_timeout_ms / 1000
        with self._cond:
            while self._error is None and (
                    len(self._in_flight) >= self._slots
                    or (keys and any(k & keys for f, k in self._in_flight))):
                self._wait_until(deadline)
            entry: list[Any] = []
            future = self._pool.submit(self._run, batch, entry)
            self._in_flight.append((future, keys))
            entry.append(future)

    # -- pool threads ---------------------------------------------------------------
    def _run(self, batch: list[_Item], entry: list[Any]) -> None:
        try:
            self._send(batch)
        except BaseException as exc:  # recorded here, raised on the task thread
            if isinstance(exc, ConnectError):
                self._fail(exc)
            elif is_retriable(exc):
                self._fail(ConnectError(f"Bulk request of {len(batch)} records failed after "
                                        f"{self._config.max_retries} retries: {exc}"))
            else:
                self._fail(ConnectError(f"Bulk request of {len(batch)} records was refused: "
                                        f"{exc}"))
        finally:
            with self._cond:
                self._buffered -= len(batch)
                self._in_flight = [e for e in self._in_flight if e[0] is not entry[0]] \
                    if entry else self._in_flight
                self._cond.notify_all()

    def _wait_until(self, deadline: float) -> None:
        """Wait on the condition (held) for a request to finish; ``ConnectError`` once
        ``flush.timeout.ms`` has passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise ConnectError(
                f"{self._buffered} records were still buffered after "
                f"flush.timeout.ms={self._config.flush_timeout_ms}; the server is too slow "
                "or unreachable (raise flush.timeout.ms or max.buffered.records, or lower "
                "the load)")
        self._cond.wait(min(0.5, left))

    def _overloaded(self) -> None:
        with self._cond:
            self._overloads += 1
            self._clean = 0
            if self._slots > 1:
                self._slots //= 2
                log.info("Server overloaded: %d bulk requests in flight at most", self._slots)

    def _healthy(self) -> None:
        with self._cond:
            self._clean += 1
            # One more slot per "round" of clean requests (as TCP grows its window per
            # round trip), so the limit does not spring back into the next timeout.
            if self._slots < self._config.max_in_flight and self._clean >= self._slots:
                self._slots += 1
                self._clean = 0
                self._cond.notify_all()

    def _fail(self, exc: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = exc
                log.error("Elasticsearch sink failing: %s", exc)
            self._cond.notify_all()

    def _send(self, batch: list[_Item]) -> None:
        items = batch
        attempt = 0
        while items:
            overloads_before = self._overloads
            response = self._client.bulk(b"".join(i.action.lines for i in items),
                                         self._overloaded)
            if not response.get("errors"):
                for item in items:
                    item.state.done()
                if self._overloads == overloads_before and attempt == 0:
                    self._healthy()
                return
            retry: list[_Item] = []
            last = ""
            for item, result in zip(items, response.get("items", []), strict=False):
                outcome = next(iter(result.values()), {})
                if self._classify(item, outcome, retry):
                    last = _describe(outcome)
            if not retry:
                return
            retry = _with_later_writes_of_the_same_ids(items, retry)
            if attempt >= self._config.max_retries or self.stopping.is_set():
                raise IndexingError(
                    f"{len(retry)} bulk items were still refused after "
                    f"{self._config.max_retries} retries (max.retries), e.g. "
                    f"{last}")
            self._overloaded()
            delay = backoff_s(self._config.retry_backoff_ms, attempt)
            log.warning("%d bulk items were refused (429/5xx); retrying them in %.0f ms",
                        len(retry), delay * 1000)
            attempt += 1
            if self.stopping.wait(delay):
                raise IndexingError("stopped while retrying bulk items")
            items = retry

    def _classify(self, item: _Item, outcome: dict[str, Any], retry: list[_Item]) -> bool:
        """Complete, queue for the DLQ, or queue for a retry (returns True) one item;
        raises ``IndexingError`` when the item must fail the task."""
        status = int(outcome.get("status", 200))
        error = outcome.get("error")
        if error is None and (status < 300 or (status == 404 and item.action.op == "delete")):
            item.state.done()  # a delete of a missing document is done too
            return False
        kind = error.get("type", "") if isinstance(error, dict) else str(error)
        message = _describe(outcome)
        if status == 429 or status >= 500 or kind == "es_rejected_execution_exception":
            retry.append(item)
            return True
        where = (f"{item.action.record.topic}-{item.action.record.kafka_partition}@"
                 f"{item.action.record.kafka_offset} (id {item.action.id} in "
                 f"{item.action.index})")
        if kind == VERSION_CONFLICT:
            if item.action.external or self._config.is_data_stream:
                # A replayed or out-of-order offset: the newer version stays (Confluent).
                log.debug("Ignoring version conflict for %s", where)
                item.state.done()
            else:
                log.warning("Version conflict for %s; reporting it", where)
                self._to_report.append((item, message))
            return False
        if kind in MALFORMED:
            message = self._explain(item.action, message)
            if self._reporter is not None:
                self._to_report.append((item, message))
            behavior = self._config.malformed
            if behavior == "ignore":
                log.debug("Ignoring malformed document %s: %s", where, message)
            elif behavior == "warn":
                log.warning("Skipping malformed document %s: %s", where, message)
            else:
                raise IndexingError(
                    f"Indexing {where} failed: {message}. To skip such documents set "
                    f"{BEHAVIOR_ON_MALFORMED_DOCS} to IGNORE or WARN (with a dead letter "
                    "queue to keep them)")
            if self._reporter is None:
                item.state.done()
            return False
        if self._reporter is not None:
            self._to_report.append((item, message))
        raise IndexingError(f"Indexing {where} failed: {message}")

    def _explain(self, action: BulkAction, message: str) -> str:
        """Name the field and both types when the server refused a field's value."""
        match = _FIELD_RE.search(message)
        if match is None:
            return message
        path, server_type = match.group(1), match.group(2)
        value: Any = action.record.value
        for part in path.split("."):
            value = _get(value, part)
        return (f"{message} [mapping conflict: field '{path}' is '{server_type}' in index "
                f"'{action.index}' but the record has {_kind(value)}]")


def _with_later_writes_of_the_same_ids(items: list[_Item], retry: list[_Item]) -> list[_Item]:
    """The items to send again, in order: the refused ones, plus, for documents written
    without external versions, every later item of the batch for the same id (already
    applied, but retrying only the earlier one would put an older value last)."""
    keys = {(i.action.index, i.action.id) for i in retry
            if not i.action.external and i.action.id is not None}
    if not keys:
        return retry
    chosen = {id(i) for i in retry}
    first = min(n for n, i in enumerate(items)
                if id(i) in chosen and (i.action.index, i.action.id) in keys)
    return [i for n, i in enumerate(items) if id(i) in chosen
            or (n > first and (i.action.index, i.action.id) in keys)]


def _get(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    schema = getattr(value, "schema", None)
    if schema is not None and getattr(schema, "field", None) and schema.field(name):
        return value.get(name)
    return None


def _kind(value: Any) -> str:
    names = {bool: "'boolean'", int: "'long'", float: "'double'", str: "'string'",
             dict: "'object'", list: "'array'"}
    for t, name in names.items():
        if isinstance(value, t):
            return f"{name} ({value!r:.40})"
    return f"'{type(value).__name__}'"


def _describe(outcome: dict[str, Any]) -> str:
    error = outcome.get("error")
    if isinstance(error, dict):
        text = f"{error.get('type')}: {error.get('reason')}"
        cause = error.get("caused_by")
        if isinstance(cause, dict):
            text += f" (caused by {cause.get('type')}: {cause.get('reason')})"
        return f"{outcome.get('status')} {text}"
    return f"{outcome.get('status')} {error}"
