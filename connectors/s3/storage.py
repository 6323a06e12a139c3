"""The bucket: a boto3 client with Ferry's retry policy, and the classification of S3
errors into retriable (5xx, throttling, timeouts) and fatal (missing bucket, denied,
bad credentials)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import boto3
import botocore.config
import botocore.exceptions
import botocore.loaders
import botocore.session

from connect.api import ConfigError, ConnectError, RetriableError
from connectors.s3.config import REGION, STORE_URL, S3SinkSettings

__all__ = ["S3FatalError", "S3RetriableError", "S3Storage"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_RETRIABLE_CODES = frozenset({
    "InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "Throttling",
    "ThrottlingException", "RequestTimeTooSkewed", "503", "500", "502", "504",
})
_NETWORK_ERRORS = (
    botocore.exceptions.EndpointConnectionError,
    botocore.exceptions.ConnectionClosedError,
    botocore.exceptions.ReadTimeoutError,
    botocore.exceptions.ConnectTimeoutError,
    botocore.exceptions.ResponseStreamingError,
)
_HEAD_ERRORS = {
    "404": ("NoSuchBucket", "the bucket does not exist (or the key, for HeadObject)"),
    "403": ("AccessDenied", "access denied: check the credentials and the bucket policy"),
    "400": ("BadRequest", "check the region and the credentials"),
}
#: The longest single wait between retries of one request.
MAX_BACKOFF_S = 10.0


class S3RetriableError(RetriableError):
    """An S3 request failed all its retries with a transient error; the writer keeps its
    state and tries again after ``retry.backoff.ms``."""


class S3FatalError(ConnectError):
    """An S3 error retrying cannot fix (no such bucket, access denied, bad or expired
    credentials); fails the task."""


def describe(exc: BaseException) -> str:
    """``NoSuchBucket (404): The specified bucket does not exist`` for a ClientError."""
    if isinstance(exc, botocore.exceptions.ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code, message = str(err.get("Code", "?")), err.get("Message", "")
        # HEAD answers have no body: name the error as S3 does in other answers.
        code, message = _HEAD_ERRORS.get(code, (code, message))
        return f"{code} ({status}): {message}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, _NETWORK_ERRORS):
        return True
    if isinstance(exc, botocore.exceptions.ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = str(exc.response.get("Error", {}).get("Code", ""))
        return status >= 500 or status == 429 or code in _RETRIABLE_CODES
    return False


_LOADER: botocore.loaders.Loader | None = None


def _botocore_session() -> botocore.session.Session:
    """A new botocore session (each task has its own credentials) on one data loader per
    process: loading and parsing the S3 service model and endpoint rules costs ~100 ms
    of CPU per session, paid again on every task start without it. The loader only
    caches parsed files, so sharing it between threads is safe (a race loads a file
    twice)."""
    global _LOADER
    session = botocore.session.Session()
    if _LOADER is None:
        _LOADER = session.get_component("data_loader")  # honours AWS_DATA_PATH
    else:
        session.register_component("data_loader", _LOADER)
    return session


class S3Storage:
    """One boto3 client per task. botocore's own retries are off: ``call`` retries with
    ``s3.part.retries`` and ``s3.retry.backoff.ms`` doubling, as Confluent's client does,
    so the policy is the connector's config and not botocore's defaults."""

    def __init__(self, settings: S3SinkSettings, *, stop: threading.Event | None = None) -> None:
        self.settings = settings
        self.bucket = settings.bucket
        self._stop = stop or threading.Event()
        url = settings.store_url
        if url and "://" not in url:
            url = "https://" + url
        config = botocore.config.Config(
            region_name=settings.region,
            retries={"total_max_attempts": 1, "mode": "standard"},
            s3={"addressing_style": "path" if settings.path_style else "auto"},
            connect_timeout=settings.connect_timeout_ms / 1000,
            read_timeout=settings.read_timeout_ms / 1000,
            # Checksums of every body: boto3's new default is fine on AWS but some
            # S3-compatible stores reject it; send them only when the API requires them.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        credentials: dict[str, Any] = {}
        if settings.access_key_id:
            credentials = {"aws_access_key_id": settings.access_key_id,
                           "aws_secret_access_key": settings.secret_access_key.value}
        session = boto3.session.Session(**credentials, botocore_session=_botocore_session())
        try:
            self.client = session.client("s3", endpoint_url=url, config=config)
        except ValueError as exc:  # botocore's word for a malformed endpoint or region
            raise ConfigError(STORE_URL if url else REGION, f"cannot make an S3 client for "
                              f"{url or settings.region!r}: {exc}") from exc
        self._uploader: ThreadPoolExecutor | None = None

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` on the upload thread (one per task: parts go up while the task's
        thread encodes the next records; boto3 clients are thread-safe)."""
        if self._uploader is None:
            self._uploader = ThreadPoolExecutor(1, thread_name_prefix="s3-upload")
        return self._uploader.submit(fn)

    def close(self) -> None:
        """Stop retry waits and the upload thread."""
        self._stop.set()
        if self._uploader is not None:
            self._uploader.shutdown(wait=True, cancel_futures=True)
            self._uploader = None

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` with retries on transient errors; raises ``S3RetriableError`` once they
        are spent and ``S3FatalError`` at once for the rest. ``what`` names the request in
        messages."""
        s = self.settings
        attempt = 0
        while True:
            try:
                return fn()
            except Exception as exc:  # boto3 raises botocore's and urllib3's
                if not is_retriable(exc):
                    raise S3FatalError(f"S3 {what} in bucket '{self.bucket}' failed: "
                                       f"{describe(exc)}") from exc
                if attempt >= s.part_retries or self._stop.is_set():
                    raise S3RetriableError(
                        f"S3 {what} in bucket '{self.bucket}' failed {attempt + 1} times, "
                        f"last: {describe(exc)}") from exc
                wait = min(s.s3_retry_backoff_ms / 1000 * 2**attempt, MAX_BACKOFF_S)
                log.warning("S3 %s in bucket %s failed (%s); retry %d of %d in %.2fs", what,
                            self.bucket, describe(exc), attempt + 1, s.part_retries, wait)
                attempt += 1
                self._stop.wait(wait)

    def check_bucket(self) -> None:
        """Raise ``S3FatalError`` naming the bucket unless it exists and is reachable with
        these credentials."""
        self.call("HeadBucket", lambda: self.client.head_bucket(Bucket=self.bucket))

    def list_keys(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix``, in key order."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            page = self.call("ListObjectsV2", lambda kw=kwargs: self.client.list_objects_v2(**kw))
            for item in page.get("Contents", []):
                yield item["Key"]
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def metadata(self, key: str) -> dict[str, str]:
        """The user metadata (``x-amz-meta-*``) of an object."""
        head = self.call("HeadObject", lambda: self.client.head_object(Bucket=self.bucket,
                                                                      Key=key))
        return dict(head.get("Metadata", {}))

    def sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)
