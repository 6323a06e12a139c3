"""An object being written: bytes stream into multipart-upload parts of ``s3.part.size``,
so an object of any size needs one part of memory; the object appears only when
``commit()`` completes the upload, and ``abort()`` leaves nothing visible.

Failure contract: ``write()`` only buffers; uploads happen in ``upload_full_parts()`` and
``commit()``, which may raise ``S3RetriableError`` and can then simply be called again
(the bytes of a failed part are kept, the parts already uploaded stay recorded).

A full part is uploaded on the storage's upload thread while the task goes on encoding
records, with at most one part in flight per object: memory is at most two parts per
open object, and the upload overlaps the work of the task's thread.
"""

from __future__ import annotations

import io
import logging
from concurrent.futures import Future
from typing import Any

from connectors.s3.storage import S3Storage

__all__ = ["S3OutputStream"]

log = logging.getLogger(__name__)


class S3OutputStream(io.RawIOBase):
    """File-like (``write``, ``tell``, ``flush``) so fastavro and pyarrow can write into it.
    Small objects (one part or less) are sent with a single PutObject, which is as atomic
    as CompleteMultipartUpload and needs one request instead of three."""

    def __init__(self, storage: S3Storage, key: str, part_size: int,
                 metadata: dict[str, str] | None = None) -> None:
        super().__init__()
        self.storage = storage
        self.key = key
        self.part_size = part_size
        self.metadata = dict(metadata or {})
        self._buffer = bytearray()
        self._position = 0
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        #: The part being uploaded: (number, body, future of its ETag).
        self._inflight: tuple[int, bytearray, Future[str]] | None = None
        #: A part whose upload failed, to upload again before anything else.
        self._failed: tuple[int, bytearray] | None = None
        self.committed = False

    # -- io.RawIOBase -------------------------------------------------------------------

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self._buffer += view
        self._position += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        """Nothing: uploads happen in ``upload_full_parts()`` and ``commit()``."""

    @property
    def closed(self) -> bool:  # pyarrow asks; the stream stays open until commit/abort
        return False

    # -- uploads ------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def upload_full_parts(self) -> None:
        """Start uploading full parts of the buffer, waiting for the part in flight first
        (retriable; see the module doc)."""
        if self._failed is not None:
            number, body = self._failed
            self._record(number, self._upload_part_now(number, body))
            self._failed = None
        while len(self._buffer) >= self.part_size:
            self._settle()
            # CreateMultipartUpload too goes up on the upload thread (with the first part):
            # the task's thread makes no S3 request while it encodes.
            number = len(self._parts) + 1
            body = self._take_part()
            future = self.storage.submit(lambda n=number, b=body: self._upload_part_now(n, b))
            self._inflight = (number, body, future)

    def commit(self) -> None:
        """Make the object visible with everything written (retriable). Idempotent."""
        if self.committed:
            return
        s, bucket = self.storage, self.storage.bucket
        # Everything inline from here: commit may itself run on the upload thread (whose
        # earlier work, the part in flight, is then already done).
        self._settle()
        if self._failed is not None:
            number, body = self._failed
            self._record(number, self._upload_part_now(number, body))
            self._failed = None
        while len(self._buffer) >= self.part_size:
            number, body = len(self._parts) + 1, self._take_part()
            try:
                self._record(number, self._upload_part_now(number, body))
            except BaseException:
                self._failed = (number, body)
                raise
        # The last bytes go up as they are (no copy); the buffer is replaced only once
        # they are uploaded, so a retried commit sends them again.
        body = self._buffer
        if self._upload_id is None:
            s.call(f"PutObject {self.key}", lambda: s.client.put_object(
                Bucket=bucket, Key=self.key, Body=body, Metadata=self.metadata))
        else:
            if body or not self._parts:
                number = len(self._parts) + 1
                self._record(number, self._upload_part_now(number, body))
                self._buffer = bytearray()
            parts = list(self._parts)
            upload_id = self._upload_id
            s.call(f"CompleteMultipartUpload {self.key}",
                   lambda: s.client.complete_multipart_upload(
                       Bucket=bucket, Key=self.key, UploadId=upload_id,
                       MultipartUpload={"Parts": parts}))
        self.committed = True
        self._buffer = bytearray()
        log.debug("committed s3://%s/%s (%d bytes)", bucket, self.key, self._position)

    def abort(self) -> None:
        """Drop the object: abort the multipart upload, if any. Best effort: an upload left
        behind is invisible and a bucket lifecycle rule removes it."""
        self._buffer = bytearray()
        self._failed = None
        if self._inflight is not None:
            self._inflight[2].exception()  # wait; its outcome no longer matters
            self._inflight = None
        if self._upload_id is None or self.committed:
            return
        s, upload_id = self.storage, self._upload_id
        self._upload_id = None
        try:
            s.call(f"AbortMultipartUpload {self.key}", lambda: s.client.abort_multipart_upload(
                Bucket=s.bucket, Key=self.key, UploadId=upload_id))
        except Exception as exc:
            log.warning("could not abort the upload of s3://%s/%s: %s", s.bucket, self.key, exc)

    def _settle(self) -> None:
        """Wait for the part in flight; on failure keep it for the next attempt."""
        if self._inflight is None:
            return
        number, body, future = self._inflight
        self._inflight = None
        try:
            etag = future.result()
        except BaseException:
            self._failed = (number, body)
            raise
        self._record(number, etag)

    def _take_part(self) -> bytearray:
        """The first ``part_size`` bytes of the buffer, without copying them: the buffer
        itself is cut to one part and handed over, and a new buffer takes the rest (less
        than one write's worth)."""
        part, size = self._buffer, self.part_size
        self._buffer = part[size:]
        del part[size:]
        return part

    def _record(self, number: int, etag: str) -> None:
        self._parts.append({"ETag": etag, "PartNumber": number})

    def _ensure_upload(self) -> None:
        if self._upload_id is None:
            s = self.storage
            created = s.call(f"CreateMultipartUpload {self.key}",
                             lambda: s.client.create_multipart_upload(
                                 Bucket=s.bucket, Key=self.key, Metadata=self.metadata))
            self._upload_id = created["UploadId"]

    def _upload_part_now(self, number: int, body: bytearray) -> str:
        s = self.storage
        self._ensure_upload()
        upload_id = self._upload_id
        answer = s.call(f"UploadPart {number} of {self.key}", lambda: s.client.upload_part(
            Bucket=s.bucket, Key=self.key, UploadId=upload_id, PartNumber=number, Body=body))
        return str(answer["ETag"])
