"""The GitHub client: App JWT → installation token (cached), retries with backoff, no secrets in errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from tests.fakes.fake_github import FakeGithub
from tracker.github.client import (
    GithubClient,
    GithubError,
    GithubRateLimited,
    GithubSetupError,
    client_from_settings,
)
from tracker.settings import Settings

REPO = "sgl-project/sglang"
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    """A fresh RSA key pair (private PEM, public PEM) for the fake App."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def app_client(fake: FakeGithub, private: str, clock: Clock, waits: list[float]) -> GithubClient:
    return GithubClient(
        api_url="https://github.invalid/api/v3",
        app_id=912345,
        private_key=private,
        transport=fake.transport(),
        sleep=waits.append,
        clock=clock,
    )


def test_app_jwt_buys_an_installation_token_that_is_cached(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public)
    fake.add_pull(REPO, 1, head_sha="b" * 40, merge_base="a" * 40)
    clock = Clock()
    client = app_client(fake, private, clock, [])
    client.remember_installation(REPO, fake.installation_id)
    for _ in range(3):
        assert client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)["number"] == 1
    assert len(fake.calls_to("POST", "/access_tokens")) == 1
    assert {call.authorization for call in fake.calls_to("GET", "/pulls/1")} == {"Bearer ghs_fake0001"}
    # Near expiry (the fake's tokens expire at 13:00) a new token is bought.
    clock.now = fake.now = T0 + dt.timedelta(minutes=56)
    client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert len(fake.calls_to("POST", "/access_tokens")) == 2


def test_installation_is_looked_up_when_no_webhook_named_it(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public)
    fake.add_pull(REPO, 1, head_sha="b" * 40, merge_base="a" * 40)
    client = app_client(fake, private, Clock(), [])
    client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert len(fake.calls_to("GET", f"/repos/{REPO}/installation")) == 1


def test_a_wrong_app_key_is_refused(app_key: tuple[str, str]) -> None:
    _, public = app_key
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    wrong = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    fake = FakeGithub(app_public_key=public)
    client = app_client(fake, wrong, Clock(), [])
    client.remember_installation(REPO, fake.installation_id)
    with pytest.raises(GithubSetupError) as raised:
        client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert raised.value.status == 401
    assert "check the App id and private key" in str(raised.value)
    assert not raised.value.transient


def test_an_app_not_installed_on_the_repository_is_a_set_up_error(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public, installed_on=set())
    client = app_client(fake, private, Clock(), [])
    with pytest.raises(GithubSetupError) as raised:
        client.request("GET", f"/repos/{REPO}/collaborators/someone/permission", repository=REPO)
    assert raised.value.status == 404
    assert f"not installed on {REPO}" in str(raised.value)
    assert fake.calls_to("GET", "/permission") == []  # never read as "not a collaborator"


def test_a_stale_installation_id_is_said_and_forgotten(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public)
    fake.add_pull(REPO, 1, head_sha="b" * 40, merge_base="a" * 40)
    client = app_client(fake, private, Clock(), [])
    client.remember_installation(REPO, 4242)  # a webhook from before the App was reinstalled
    with pytest.raises(GithubSetupError) as raised:
        client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert "installation 4242 does not exist" in str(raised.value)
    # Not kept for the repository: the next call looks the installation up and works.
    assert client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)["number"] == 1
    assert len(fake.calls_to("GET", f"/repos/{REPO}/installation")) == 1
    # A redelivery (or an old outbox row) naming the stale id again does not put it back.
    client.remember_installation(REPO, 4242)
    assert client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)["number"] == 1


def test_the_bot_knows_its_own_login(app_key: tuple[str, str]) -> None:
    private, public = app_key
    app = app_client(FakeGithub(app_public_key=public, app_slug="perf-bot"), private, Clock(), [])
    assert app.own_login() == "perf-bot[bot]"
    fake = FakeGithub(token_login="perftrack-ci")
    token = GithubClient(token="ghp_x", transport=fake.transport())
    assert token.own_login() == token.own_login() == "perftrack-ci"
    assert len(fake.calls_to("GET", "/user")) == 1  # asked once


def test_retries_502_with_exponential_backoff(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public)
    fake.add_pull(REPO, 1, head_sha="b" * 40, merge_base="a" * 40)
    waits: list[float] = []
    client = app_client(fake, private, Clock(), waits)
    client.remember_installation(REPO, fake.installation_id)
    client.installation_token(fake.installation_id)
    fake.fail_next(2)
    assert client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)["number"] == 1
    assert waits == [1.0, 2.0]
    assert [call.status for call in fake.calls_to("GET", "/pulls/1")] == [502, 502, 200]


def _scripted(answers: list[httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handle)


def test_429_and_rate_limited_403_wait_as_told() -> None:
    seen: list[httpx.Request] = []
    answers = [
        httpx.Response(429, headers={"Retry-After": "7"}, json={"message": "slow down"}),
        httpx.Response(
            403,
            headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(T0.timestamp()) + 12)},
            json={"message": "API rate limit exceeded"},
        ),
        httpx.Response(200, json={"ok": True}),
    ]
    waits: list[float] = []
    client = GithubClient(
        token="ghp_x", transport=_scripted(answers, seen), sleep=waits.append, clock=Clock()
    )
    assert client.request("GET", "/rate_limit", repository=REPO) == {"ok": True}
    assert waits == [7.0, 13.0]
    assert len(seen) == 3


def test_plain_403_and_404_are_not_retried() -> None:
    seen: list[httpx.Request] = []
    answers = [httpx.Response(403, json={"message": "Resource not accessible by integration"})]
    client = GithubClient(token="ghp_x", transport=_scripted(answers, seen), sleep=lambda _s: None)
    with pytest.raises(GithubError, match="403 Resource not accessible"):
        client.request("POST", f"/repos/{REPO}/statuses/abc", repository=REPO, json={"state": "pending"})
    assert len(seen) == 1


def test_token_never_appears_in_errors() -> None:
    secret = "ghp_TOPSECRET0123456789"
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        # A hostile or confused server echoing the credentials must not leak them either.
        return httpx.Response(502, text=f"upstream said: {request.headers['authorization']}")

    client = GithubClient(
        token=secret, transport=httpx.MockTransport(handle), attempts=3, sleep=lambda _s: None
    )
    with pytest.raises(GithubError) as raised:
        client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert len(seen) == 3
    assert seen[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in str(raised.value)
    assert secret not in repr(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None


def test_transport_errors_are_retried_then_reported_without_details() -> None:
    attempts: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        raise httpx.ConnectError("connection refused", request=request)

    client = GithubClient(
        token="ghp_y", transport=httpx.MockTransport(handle), attempts=2, sleep=lambda _s: None
    )
    with pytest.raises(GithubError, match="ConnectError"):
        client.request("GET", "/x", repository=REPO)
    assert len(attempts) == 2


def test_client_from_settings(tmp_path: Path, app_key: tuple[str, str]) -> None:
    private, _ = app_key
    assert client_from_settings(Settings(environment="test")) is None
    assert client_from_settings(Settings(environment="test", github_token=SecretStr("ghp_z"))) is not None
    key_file = tmp_path / "app.pem"
    key_file.write_text(private)
    from_path = client_from_settings(
        Settings(environment="test", github_app_id=1, github_app_private_key=SecretStr(str(key_file)))
    )
    from_text = client_from_settings(
        Settings(environment="test", github_app_id=1, github_app_private_key=SecretStr(private))
    )
    assert from_path is not None
    assert from_path.is_app
    assert from_text is not None
    assert from_text.is_app


def test_a_suspended_installation_is_said_so_not_blamed_on_the_key(app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public, suspended=True)
    client = app_client(fake, private, Clock(), [])
    client.remember_installation(REPO, fake.installation_id)
    with pytest.raises(GithubSetupError) as raised:
        client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert raised.value.status == 403
    assert "installation is suspended" in str(raised.value)
    assert "unsuspend" in str(raised.value)
    assert "private key" not in str(raised.value)


def test_a_rate_limit_that_resets_later_is_not_waited_out_in_place() -> None:
    fake = FakeGithub()
    fake.add_pull(REPO, 1, head_sha="b" * 40, merge_base="a" * 40)
    reset = T0 + dt.timedelta(hours=1)
    fake.rate_limit_next(5, reset_at=reset)
    waits: list[float] = []
    client = GithubClient(token="ghp_x", transport=fake.transport(), sleep=waits.append, clock=Clock())
    with pytest.raises(GithubRateLimited) as raised:
        client.request("GET", f"/repos/{REPO}/pulls/1", repository=REPO)
    assert waits == []  # no caller waits an hour on GitHub
    assert len(fake.calls_to("GET", "/pulls/1")) == 1
    assert raised.value.transient
    assert reset <= raised.value.retry_at <= reset + dt.timedelta(seconds=2)
    assert "API rate limit exceeded" in str(raised.value)


def test_a_secondary_rate_limit_names_its_retry_after() -> None:
    fake = FakeGithub()
    fake.rate_limit_next(1, reset_at=T0, status=429, retry_after_s=120)
    client = GithubClient(token="ghp_x", transport=fake.transport(), sleep=lambda _s: None, clock=Clock())
    with pytest.raises(GithubRateLimited) as raised:
        client.request("POST", f"/repos/{REPO}/issues/1/comments", repository=REPO, json={"body": "x"})
    assert raised.value.retry_at == T0 + dt.timedelta(seconds=120)
    assert fake.comments_on(1) == []


def test_a_post_whose_answer_was_lost_is_not_sent_again() -> None:
    fake = FakeGithub()
    fake.fail_next(1, methods=("POST",), carried_out=True)  # GitHub created it, then answered 502
    client = GithubClient(token="ghp_x", transport=fake.transport(), sleep=lambda _s: None)
    with pytest.raises(GithubError) as raised:
        client.request("POST", f"/repos/{REPO}/issues/1/comments", repository=REPO, json={"body": "x"})
    assert raised.value.transient
    assert len(fake.comments_on(1)) == 1
    assert len(fake.calls_to("POST", "/comments")) == 1


@pytest.mark.parametrize(
    ("error", "sent"), [(httpx.ReadTimeout("slow"), 1), (httpx.ConnectError("refused"), 3)]
)
def test_a_post_is_sent_again_only_when_it_never_left(error: httpx.TransportError, sent: int) -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        raise error

    client = GithubClient(
        token="ghp_x", transport=httpx.MockTransport(handle), attempts=3, sleep=lambda _s: None
    )
    with pytest.raises(GithubError):
        client.request("POST", f"/repos/{REPO}/issues/1/comments", repository=REPO, json={"body": "x"})
    assert len(seen) == sent
