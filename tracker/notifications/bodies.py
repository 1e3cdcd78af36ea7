"""What a delivery sends: a Slack-compatible incoming-webhook body, or the generic JSON signed like
GitHub's webhooks.

- ``slack``: ``{"text": ..., "blocks": [...]}``: a header section and a context line in ``mrkdwn``,
  the plain ``text`` as the notification's fallback. Slack's control characters (``&``, ``<``,
  ``>``) are escaped in what the tracker did not write itself.
- ``json``: ``{"event", "delivery", "subject": {"kind", "id"}, "title", "lines", "url",
  "details"}``, with ``X-Perftrack-Event``, ``X-Perftrack-Delivery`` and, when the subscription has
  a secret, ``X-Perftrack-Signature-256: sha256=<hex>``: HMAC-SHA256 of the raw body under the
  secret, as GitHub signs ``X-Hub-Signature-256``. A receiver checks it with a constant-time compare.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from tracker.enums import NotificationEvent, NotificationFormat, NotificationSubject

EVENT_HEADER = "X-Perftrack-Event"
DELIVERY_HEADER = "X-Perftrack-Delivery"
SIGNATURE_HEADER = "X-Perftrack-Signature-256"
USER_AGENT = "perftrack-notifications"


@dataclass(frozen=True)
class Outgoing:
    """A delivery as read from its row: plain values, so that sending touches no database."""

    row_id: int
    delivery: str
    event: NotificationEvent
    subject_kind: NotificationSubject
    subject_id: int | None
    payload: dict[str, Any]
    url: str
    format: NotificationFormat
    secret: str | None
    public_url: str | None = None  # the tracker's, for the link to the page the event is about

    @property
    def link(self) -> str | None:
        """The absolute link to the event's page, when the tracker's public URL is known."""
        path = self.payload.get("path")
        if not self.public_url or not isinstance(path, str):
            return None
        return f"{self.public_url.rstrip('/')}{path}"


def signature(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``body`` in hex."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def render(outgoing: Outgoing) -> tuple[bytes, dict[str, str]]:
    """The raw body and the headers of a delivery."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: outgoing.event.value,
        DELIVERY_HEADER: outgoing.delivery,
    }
    if outgoing.format is NotificationFormat.SLACK:
        document = slack_body(outgoing.payload, link=outgoing.link)
    else:
        document = generic_body(outgoing)
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    if outgoing.secret and outgoing.format is NotificationFormat.JSON:
        headers[SIGNATURE_HEADER] = signature(outgoing.secret, body)
    return body, headers


def generic_body(outgoing: Outgoing) -> dict[str, Any]:
    """The generic JSON document."""
    payload = outgoing.payload
    return {
        "event": outgoing.event.value,
        "delivery": outgoing.delivery,
        "subject": {"kind": outgoing.subject_kind.value, "id": outgoing.subject_id},
        "title": payload.get("title", ""),
        "lines": list(payload.get("lines", [])),
        "url": outgoing.link,
        "details": payload.get("details", {}),
    }


def slack_body(payload: dict[str, Any], *, link: str | None) -> dict[str, Any]:
    """The Slack incoming-webhook document: fallback text and mrkdwn blocks."""
    title = _escape(str(payload.get("title", "")))
    lines = [_escape(str(line)) for line in payload.get("lines", [])]
    url = link
    heading = f"*<{url}|{title}>*" if url else f"*{title}*"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join([heading, *lines])[:3000]}}
    ]
    if url:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{url}|open in perftrack>"}]}
        )
    return {"text": "\n".join([title, *lines])[:3000], "blocks": blocks}


def _escape(text: str) -> str:
    """Slack's three control characters, escaped as its formatting reference asks."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
