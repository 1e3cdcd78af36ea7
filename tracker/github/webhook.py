"""GitHub webhook signatures: ``X-Hub-Signature-256`` is HMAC-SHA256 of the raw body."""

from __future__ import annotations

import hashlib
import hmac


def sign(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` (compared in constant time, as bytes).

    A malformed header (not ASCII: ``compare_digest`` refuses such a str) is simply not valid.
    """
    if not header or not header.startswith("sha256="):
        return False
    try:
        given = header.encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(sign(secret, body).encode("ascii"), given)
