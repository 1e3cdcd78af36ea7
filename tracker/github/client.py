"""A small GitHub REST client: App or personal-token auth, retries with backoff, no secrets in errors.

As a GitHub App it signs a JWT (RS256, the app's private key) and trades it for an installation
token (``POST /app/installations/{id}/access_tokens``), cached until shortly before it expires.
The installation of a repository comes from the webhook (``installation.id``) or is looked up
(``GET /repos/{owner}/{repo}/installation``). 5xx, 429 and rate-limited 403 answers are retried
in place when GitHub asks for a short wait; a rate limit that resets later raises
:class:`GithubRateLimited` at once, naming the time to try again, so no caller waits on GitHub (an
outbox row or a delivery is rescheduled to that time). A request that may have taken effect without
its answer arriving (a ``POST`` answered 5xx, or a timeout) is not sent again here: the caller looks
for what it created before creating it again.
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
from tenacity import (
    RetryCallState,
    Retrying,
    stop_after_attempt,
    wait_exponential,
)

from tracker.access.redaction import Redactor
from tracker.errors import ExternalServiceError
from tracker.settings import Settings

logger = logging.getLogger(__name__)

_API_VERSION = "2022-11-28"
_TOKEN_MARGIN = dt.timedelta(minutes=5)  # refresh an installation token this long before it expires
_MAX_WAIT_S = 60.0
RATE_LIMIT_WAIT_S = 15.0  # a rate limit that resets within this is waited out in place
_IDEMPOTENT = frozenset({"GET", "HEAD", "PATCH", "PUT", "DELETE"})


_BEARER = re.compile(r"Bearer\s+\S+", re.IGNORECASE)


class GithubError(ExternalServiceError):
    """A GitHub call failed; ``status`` is the HTTP status (``None``: no answer). Never holds a token."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether trying again later may succeed (no answer, a server error, a rate limit)."""
        return self.status is None or self.status >= 500 or self.status == 429


class GithubRateLimited(GithubError):
    """GitHub's rate limit (403 or 429 with ``x-ratelimit-remaining: 0`` or ``retry-after``):
    nothing was done; ``retry_at`` is when GitHub lets perftrack call again."""

    def __init__(self, message: str, status: int, retry_at: dt.datetime) -> None:
        super().__init__(message, status)
        self.retry_at = retry_at

    @property
    def transient(self) -> bool:
        return True


class GithubSetupError(GithubError):
    """perftrack cannot act on a repository at all: the App is not installed there, or GitHub
    refuses its credentials. Not the answer to the call that was made (a 404 here is not "no
    such user"): an operator must fix the set-up, and the message says what to fix."""

    @property
    def transient(self) -> bool:
        return False


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
        # Installation ids GitHub refused (a webhook or outbox row from before a reinstall): a
        # delivery naming one again does not put it back; the lookup finds the current one.
        self._refused: set[int] = set()
        self._login: str | None = None

    @property
    def is_app(self) -> bool:
        """Whether the client authenticates as a GitHub App (else with a personal token)."""
        return self._app_id is not None and self._private_key is not None

    def remember_installation(self, repository: str, installation_id: int) -> None:
        """Note the App installation of ``repository`` (owner/name), as a webhook names it; an id
        GitHub refused before is not taken again (the installation is looked up instead)."""
        if installation_id in self._refused:
            return
        self._installations[repository.lower()] = installation_id

    def request(self, method: str, path: str, *, repository: str, json: dict[str, Any] | None = None) -> Any:
        """Call ``path`` on behalf of ``repository`` (owner/name); the decoded JSON answer (or None).

        A ``POST`` is sent once when its outcome is unknown (5xx, a timeout): it may have taken effect.
        """
        headers = {"Authorization": f"Bearer {self._repository_token(repository)}"}
        try:
            response = self._send(method, path, headers=headers, json=json)
        except GithubError as error:
            if error.status == 401 and not isinstance(error, GithubSetupError):
                self._forget(repository)
                what = "the App's installation token" if self.is_app else "PERFTRACK_GITHUB_TOKEN"
                raise GithubSetupError(f"GitHub refused {what} (401): {error}", status=401) from None
            raise
        return response.json() if response.content else None

    def own_login(self) -> str:
        """The login the bot's comments appear under: ``<app-slug>[bot]`` for an App, else the
        token's user. Asked of GitHub once and remembered."""
        if self._login is None:
            if self.is_app:
                answer = self._send("GET", "/app", headers={"Authorization": f"Bearer {self.app_jwt()}"})
                self._login = f"{answer.json()['slug']}[bot]"
            else:
                answer = self._send("GET", "/user", headers={"Authorization": f"Bearer {self._token}"})
                self._login = str(answer.json()["login"])
        return self._login

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
            try:
                found = self._send(
                    "GET",
                    f"/repos/{repository}/installation",
                    headers={"Authorization": f"Bearer {self.app_jwt()}"},
                ).json()
            except GithubError as error:
                raise _setup_error(error, f"the GitHub App is not installed on {repository}") from None
            installation_id = int(found["id"])
            self._installations[repository.lower()] = installation_id
        try:
            token = self.installation_token(installation_id)
        except GithubSetupError:
            # A stale id (the App was reinstalled): look it up next time, and never take it again.
            self._refused.add(installation_id)
            self._forget(repository)
            raise
        self._refused.discard(installation_id)  # the lookup found it, and it works now
        return token

    def installation_token(self, installation_id: int) -> str:
        """The installation's access token, fetched once and reused until shortly before it expires."""
        cached = self._installation_tokens.get(installation_id)
        if cached is not None and cached.expires_at - _TOKEN_MARGIN > self._clock():
            return cached.value
        try:
            answer = self._send(
                "POST",
                f"/app/installations/{installation_id}/access_tokens",
                headers={"Authorization": f"Bearer {self.app_jwt()}"},
            ).json()
        except GithubError as error:
            raise _setup_error(
                error, f"GitHub App installation {installation_id} does not exist (uninstalled?)"
            ) from None
        expires_at = dt.datetime.fromisoformat(str(answer["expires_at"]).replace("Z", "+00:00"))
        token = _Token(value=str(answer["token"]), expires_at=expires_at)
        self._installation_tokens[installation_id] = token
        return token.value

    def _forget(self, repository: str) -> None:
        installation_id = self._installations.pop(repository.lower(), None)
        if installation_id is not None:
            self._installation_tokens.pop(installation_id, None)

    # --- transport with retries ---

    def _send(
        self, method: str, path: str, *, headers: dict[str, str], json: dict[str, Any] | None = None
    ) -> httpx.Response:
        def log_retry(state: RetryCallState) -> None:
            response = _answer(state)
            if response is not None and state.next_action is not None:
                wait = state.next_action.sleep
                logger.info("GitHub %s %s: %d, retrying in %.1f s", method, path, response.status_code, wait)

        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            retry=self._retry_predicate(method),
            sleep=self._sleep,
            before_sleep=log_retry,
            retry_error_callback=_last_outcome,
        )
        try:
            response: httpx.Response = retrying(self._http.request, method, path, headers=headers, json=json)
        except httpx.TransportError as error:
            raise GithubError(f"{method} {path}: {type(error).__name__}") from None
        if response.is_success:
            return response
        message = f"{method} {path}: {response.status_code} {self._redact(_message(response))}"
        retry_at = self._rate_limit_end(response)
        if retry_at is not None:
            raise GithubRateLimited(
                f"{message} (rate limited until {retry_at:%H:%M:%S} UTC)", response.status_code, retry_at
            )
        raise GithubError(message, status=response.status_code)

    def _retry_predicate(self, method: str) -> Callable[[RetryCallState], bool]:
        """Whether to send again in place: not a request that may have taken effect (a ``POST`` with
        no answer or a 5xx), nor a rate limit that resets later than :data:`RATE_LIMIT_WAIT_S`."""
        idempotent = method.upper() in _IDEMPOTENT

        def retry(state: RetryCallState) -> bool:
            assert state.outcome is not None
            if state.outcome.failed:
                error = state.outcome.exception()
                never_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
                return isinstance(error, httpx.TransportError) and (idempotent or never_sent)
            response: httpx.Response = state.outcome.result()
            retry_at = self._rate_limit_end(response)
            if retry_at is not None:
                return (retry_at - self._clock()).total_seconds() <= RATE_LIMIT_WAIT_S
            return idempotent and response.status_code >= 500

        return retry

    def _rate_limit_end(self, response: httpx.Response) -> dt.datetime | None:
        """When a rate-limited answer (403 or 429 saying so, any 429) lets perftrack call again;
        ``None`` for any other answer."""
        status = response.status_code
        retry_after = response.headers.get("Retry-After")
        reset = response.headers.get("X-RateLimit-Reset")
        exhausted = response.headers.get("X-RateLimit-Remaining") == "0"
        if status not in (403, 429) or (status == 403 and not exhausted and retry_after is None):
            return None
        now = self._clock()
        if retry_after is not None and retry_after.isdigit():
            return now + dt.timedelta(seconds=int(retry_after))
        if exhausted and reset is not None and reset.isdigit():
            return max(dt.datetime.fromtimestamp(int(reset) + 1, dt.UTC), now)
        return now + dt.timedelta(seconds=_MAX_WAIT_S)  # GitHub's advice when it names no time

    def _redact(self, text: str) -> str:
        """``text`` without any credential this client holds (GitHub may quote what it was sent)."""
        held = [self._token, *(token.value for token in self._installation_tokens.values())]
        return _BEARER.sub("Bearer [redacted]", Redactor(secret for secret in held if secret).text(text))

    def _wait(self, state: RetryCallState) -> float:
        """What GitHub asked for (Retry-After, a rate limit's reset), else exponential backoff."""
        response = _answer(state)
        if response is not None:
            retry_at = self._rate_limit_end(response)
            if retry_at is not None:
                return min(max((retry_at - self._clock()).total_seconds(), 0.0), _MAX_WAIT_S)
        return wait_exponential(multiplier=self._backoff_s, max=_MAX_WAIT_S)(state)


def _answer(state: RetryCallState) -> httpx.Response | None:
    """The response the attempt just made got (``None``: it got no answer)."""
    if state.outcome is None or state.outcome.failed:
        return None
    response: httpx.Response = state.outcome.result()
    return response


def _last_outcome(state: RetryCallState) -> Any:
    """Out of attempts: the last response, or the last transport error raised again."""
    assert state.outcome is not None
    return state.outcome.result()


def _setup_error(error: GithubError, not_found: str) -> GithubError:
    """The error of an App authentication step: a set-up problem when GitHub refused it."""
    if isinstance(error, GithubRateLimited):
        return error  # nothing wrong with the set-up: tried again after the reset
    if error.status == 404:
        return GithubSetupError(f"{not_found}: {error}", status=404)
    if error.status == 403 and "suspended" in str(error).lower():
        message = (
            f"the GitHub App's installation is suspended (an owner of the account must unsuspend it "
            f"in the App's installation settings): {error}"
        )
        return GithubSetupError(message, status=403)
    if error.status in (401, 403):
        message = f"GitHub refused the App's credentials (check the App id and private key): {error}"
        return GithubSetupError(message, status=error.status)
    return error


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
