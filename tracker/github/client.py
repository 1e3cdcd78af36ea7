"""A small GitHub REST client: App or personal-token auth, retries with backoff, no secrets in errors.

As a GitHub App it signs a JWT (RS256, the app's private key) and trades it for an installation
token (``POST /app/installations/{id}/access_tokens``), cached until shortly before it expires.
The installation of a repository comes from the webhook (``installation.id``) or is looked up
(``GET /repos/{owner}/{repo}/installation``). 5xx, 429 and rate-limited 403 answers are retried.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from tracker.settings import Settings

logger = logging.getLogger(__name__)

_API_VERSION = "2022-11-28"
_TOKEN_MARGIN = dt.timedelta(minutes=5)  # refresh an installation token this long before it expires
_MAX_WAIT_S = 60.0


_BEARER = re.compile(r"Bearer\s+\S+", re.IGNORECASE)


class GithubError(Exception):
    """A GitHub call failed; ``status`` is the HTTP status (``None``: no answer). Never holds a token."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Token:
    value: str
    expires_at: dt.datetime


class GithubClient:
    """Calls GitHub's REST API as an App installation or with a personal token."""

    def __init__(
        self,
        *,
        api_url: str = "https://api.github.com",
        app_id: int | None = None,
        private_key: str | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
        attempts: int = 4,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        timeout_s: float = 30.0,
    ) -> None:
        if (app_id is None or private_key is None) and token is None:
            raise ValueError("GitHub needs an App (id and private key) or a token")
        self._app_id = app_id
        self._private_key = private_key
        self._token = token
        self._attempts = max(1, attempts)
        self._backoff_s = backoff_s
        self._sleep = sleep
        self._clock = clock
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            transport=transport,
            timeout=timeout_s,
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": _API_VERSION,
                "User-Agent": "perftrack",
            },
        )
        self._installation_tokens: dict[int, _Token] = {}
        self._installations: dict[str, int] = {}

    @property
    def is_app(self) -> bool:
        """Whether the client authenticates as a GitHub App (else with a personal token)."""
        return self._app_id is not None and self._private_key is not None

    def remember_installation(self, repository: str, installation_id: int) -> None:
        """Note the App installation of ``repository`` (owner/name), as a webhook names it."""
        self._installations[repository.lower()] = installation_id

    def request(self, method: str, path: str, *, repository: str, json: dict[str, Any] | None = None) -> Any:
        """Call ``path`` on behalf of ``repository`` (owner/name); the decoded JSON answer (or None)."""
        headers = {"Authorization": f"Bearer {self._repository_token(repository)}"}
        response = self._send(method, path, headers=headers, json=json)
        return response.json() if response.content else None

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    # --- authentication ---

    def app_jwt(self) -> str:
        """A JWT (RS256, ten minutes) that authenticates as the App itself."""
        assert self._app_id is not None
        assert self._private_key is not None
        now = int(self._clock().timestamp())
        # Issued a minute in the past: GitHub refuses tokens from a clock slightly ahead of its own.
        claims = {"iat": now - 60, "exp": now + 540, "iss": str(self._app_id)}
        return jwt.encode(claims, self._private_key, algorithm="RS256")

    def _repository_token(self, repository: str) -> str:
        if not self.is_app:
            assert self._token is not None
            return self._token
        installation_id = self._installations.get(repository.lower())
        if installation_id is None:
            found = self._send(
                "GET",
                f"/repos/{repository}/installation",
                headers={"Authorization": f"Bearer {self.app_jwt()}"},
            ).json()
            installation_id = int(found["id"])
            self._installations[repository.lower()] = installation_id
        return self.installation_token(installation_id)

    def installation_token(self, installation_id: int) -> str:
        """The installation's access token, fetched once and reused until shortly before it expires."""
        cached = self._installation_tokens.get(installation_id)
        if cached is not None and cached.expires_at - _TOKEN_MARGIN > self._clock():
            return cached.value
        answer = self._send(
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
            headers={"Authorization": f"Bearer {self.app_jwt()}"},
        ).json()
        expires_at = dt.datetime.fromisoformat(str(answer["expires_at"]).replace("Z", "+00:00"))
        token = _Token(value=str(answer["token"]), expires_at=expires_at)
        self._installation_tokens[installation_id] = token
        return token.value

    # --- transport with retries ---

    def _send(
        self, method: str, path: str, *, headers: dict[str, str], json: dict[str, Any] | None = None
    ) -> httpx.Response:
        for attempt in range(1, self._attempts + 1):
            try:
                response = self._http.request(method, path, headers=headers, json=json)
            except httpx.TransportError as error:
                if attempt == self._attempts:
                    raise GithubError(f"{method} {path}: {type(error).__name__}") from None
                self._sleep(self._wait(attempt, None))
                continue
            if response.is_success:
                return response
            retry = _retryable(response)
            if retry and attempt < self._attempts:
                wait = self._wait(attempt, response)
                logger.info("GitHub %s %s: %d, retrying in %.1f s", method, path, response.status_code, wait)
                self._sleep(wait)
                continue
            message = self._redact(_message(response))
            raise GithubError(
                f"{method} {path}: {response.status_code} {message}", status=response.status_code
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _redact(self, text: str) -> str:
        """``text`` without any credential this client holds (GitHub may quote what it was sent)."""
        held = [self._token, *(token.value for token in self._installation_tokens.values())]
        for secret in held:
            if secret:
                text = text.replace(secret, "[redacted]")
        return _BEARER.sub("Bearer [redacted]", text)

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("Retry-After")
            if retry_after is not None and retry_after.isdigit():
                return min(float(retry_after), _MAX_WAIT_S)
            reset = response.headers.get("X-RateLimit-Reset")
            if response.headers.get("X-RateLimit-Remaining") == "0" and reset and reset.isdigit():
                return min(max(float(reset) - self._clock().timestamp(), 0.0) + 1.0, _MAX_WAIT_S)
        delay: float = self._backoff_s * 2.0 ** (attempt - 1)
        return min(delay, _MAX_WAIT_S)


def _retryable(response: httpx.Response) -> bool:
    status = response.status_code
    if status >= 500 or status == 429:
        return True
    return status == 403 and (
        response.headers.get("X-RateLimit-Remaining") == "0" or "Retry-After" in response.headers
    )


def _message(response: httpx.Response) -> str:
    """GitHub's own error message, short; the request (and its token) is never echoed."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:200]
    return response.reason_phrase


def client_from_settings(
    settings: Settings, *, transport: httpx.BaseTransport | None = None
) -> GithubClient | None:
    """The client the settings describe (App preferred over token); ``None`` when neither is set."""
    private_key: str | None = None
    if settings.github_app_id is not None and settings.github_app_private_key is not None:
        private_key = _read_key(settings.github_app_private_key.get_secret_value())
    token = settings.github_token.get_secret_value() if settings.github_token is not None else None
    if private_key is None and token is None:
        return None
    return GithubClient(
        api_url=settings.github_api_url,
        app_id=settings.github_app_id if private_key is not None else None,
        private_key=private_key,
        token=token,
        transport=transport,
        timeout_s=settings.http_timeout_s,
    )


def _read_key(value: str) -> str:
    """PEM text as is, else the path of a PEM file."""
    if "-----BEGIN" in value:
        return value
    return Path(value).expanduser().read_text()
