"""Files a run uploads beside its numbers: a gzipped ``torch.profiler`` trace of an evidence run.

The content travels base64-encoded in the JSON body; :class:`FileIn` checks the name, the media
type and the decoded size, so a file the tracker would refuse is known as soon as the runner
builds its upload.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from wire.base import RecordIn

MAX_FILE_BYTES = 4 * 1024 * 1024  # decoded; with the log, an upload stays under the 16 MiB body limit
MAX_FILES = 4
FILE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,199}$"  # no directories, no hidden files
FileKind = Literal["trace"]
MediaType = Literal["application/gzip", "application/json", "text/plain"]


class FileIn(RecordIn):
    """One uploaded file: its name, what it is, its media type and its bytes (base64)."""

    name: Annotated[str, Field(pattern=FILE_NAME_PATTERN)]
    kind: FileKind = "trace"
    media_type: MediaType = "application/gzip"
    content_base64: Annotated[str, Field(max_length=(MAX_FILE_BYTES + 2) // 3 * 4)]

    @model_validator(mode="after")
    def _decodes(self) -> FileIn:
        try:
            content = base64.b64decode(self.content_base64, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError(f"content_base64: not base64 ({error})") from None
        if not content:
            raise ValueError("content_base64: the file is empty")
        if len(content) > MAX_FILE_BYTES:
            raise ValueError(f"content_base64: {len(content)} bytes is over the limit of {MAX_FILE_BYTES}")
        return self

    def content(self) -> bytes:
        """The file's bytes."""
        return base64.b64decode(self.content_base64)

    def sha256(self) -> str:
        """Hex SHA-256 of the bytes."""
        return hashlib.sha256(self.content()).hexdigest()

    @classmethod
    def of_bytes(cls, name: str, content: bytes, *, media_type: MediaType = "application/gzip") -> FileIn:
        """A file of ``content`` named ``name``."""
        return cls(name=name, media_type=media_type, content_base64=base64.b64encode(content).decode("ascii"))


def _distinct_names(files: list[FileIn]) -> list[FileIn]:
    names = [item.name for item in files]
    if len(set(names)) != len(names):
        raise ValueError("files: two files have the same name")
    total = sum(len(item.content_base64) for item in files)
    if total > (MAX_FILE_BYTES + 2) // 3 * 4:
        raise ValueError(f"files: over {MAX_FILE_BYTES} bytes together")
    return files


FilesIn = Annotated[list[FileIn], Field(max_length=MAX_FILES), AfterValidator(_distinct_names)]
