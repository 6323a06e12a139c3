"""An object being written: bytes stream into multipart-upload parts of ``s3.part.size``,
so an object of any size needs one part of memory; the object appears only when
``commit()`` completes the upload, and ``abort()`` leaves nothing visible.

Failure contract: ``write()`` only buffers; uploads happen in ``upload_full_parts()`` and
``commit()``, which may raise ``S3RetriableError`` and can then simply be called again
(the bytes of a failed part stay buffered, the parts already uploaded stay recorded).
"""

from __future__ import annotations

import io
import logging
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
        """Upload every full part in the buffer (retriable; see the module doc)."""
        while len(self._buffer) >= self.part_size:
            self._upload_part(self.part_size)

    def commit(self) -> None:
        """Make the object visible with everything written (retriable). Idempotent."""
        if self.committed:
            return
        s, bucket = self.storage, self.storage.bucket
        self.upload_full_parts()
        if self._upload_id is None:
            body = bytes(self._buffer)
            s.call(f"PutObject {self.key}", lambda: s.client.put_object(
                Bucket=bucket, Key=self.key, Body=body, Metadata=self.metadata))
        else:
            if self._buffer or not self._parts:
                self._upload_part(len(self._buffer))
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
        if self._upload_id is None or self.committed:
            return
        s, upload_id = self.storage, self._upload_id
        self._upload_id = None
        try:
            s.call(f"AbortMultipartUpload {self.key}", lambda: s.client.abort_multipart_upload(
                Bucket=s.bucket, Key=self.key, UploadId=upload_id))
        except Exception as exc:
            log.warning("could not abort the upload of s3://%s/%s: %s", s.bucket, self.key, exc)

    def _upload_part(self, size: int) -> None:
        s, bucket = self.storage, self.storage.bucket
        if self._upload_id is None:
            created = s.call(f"CreateMultipartUpload {self.key}",
                             lambda: s.client.create_multipart_upload(
                                 Bucket=bucket, Key=self.key, Metadata=self.metadata))
            self._upload_id = created["UploadId"]
        number = len(self._parts) + 1
        body = bytes(self._buffer[:size])
        upload_id = self._upload_id
        answer = s.call(f"UploadPart {number} of {self.key}", lambda: s.client.upload_part(
            Bucket=bucket, Key=self.key, UploadId=upload_id, PartNumber=number, Body=body))
        self._parts.append({"ETag": answer["ETag"], "PartNumber": number})
        del self._buffer[:size]
