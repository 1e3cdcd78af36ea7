"""The demo's GitHub: the fake GitHub (:mod:`perftrack.fakegithub`) seeded with the toy repository,
served on localhost, with the GitHub App the tracker acts as and the maintainer who asks for ``/perf``.

The toy repository is ``toydit/toydit`` there: its merged pull requests are the ``main`` commits whose
titles name one (``Title (#87)``, closed), its open ones #101-#103 (:mod:`runners.toy`). The tracker
knows the repository by its GitHub address, which git redirects to the local toy repository
(:func:`git_redirect`), so that the culprit's pull request is on GitHub as far as the tracker sees.
"""

from __future__ import annotations

import datetime as dt
import secrets
import subprocess
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from perftrack.fakegithub import FakeGithub
from perftrack.fakegithub.deliveries import post_and_deliver
from runners.toy import ToyRepository
from tracker.vcs.pulls import pull_number_in

REPOSITORY = "toydit/toydit"
GITHUB_URL = f"https://github.com/{REPOSITORY}"
MAINTAINER = "mira"  # Mira Castell, who wrote the toy's first commit: a maintainer may run /perf
APP_ID = 424242
WEBHOOK_PATH = "/api/v1/github/webhook"


@dataclass(frozen=True)
class AppKey:
    """The GitHub App's key pair, PEM: the tracker signs with the private half, the fake checks."""

    private_pem: str
    public_pem: str


@dataclass(frozen=True)
class DemoGithub:
    """The seeded fake, the App's key and the webhook's secret (both made fresh for each demo)."""

    fake: FakeGithub
    key: AppKey
    webhook_secret: str

    def settings(self, api_url: str) -> dict[str, Any]:
        """The tracker's settings that point it at this GitHub (served at ``api_url``) as its App."""
        return {
            "github_api_url": api_url,
            "github_app_id": APP_ID,
            "github_app_private_key": SecretStr(self.key.private_pem),
            "github_webhook_secret": SecretStr(self.webhook_secret),
        }

    def ask_perf(self, tracker_url: str, number: int, command: str) -> None:
        """The maintainer comments ``command`` on pull request ``number``; GitHub delivers it to the
        tracker. Raises when the tracker refuses the delivery."""
        answer = post_and_deliver(
            self.fake,
            repository=REPOSITORY,
            number=number,
            body=command,
            login=MAINTAINER,
            webhook_url=tracker_url + WEBHOOK_PATH,
            secret=self.webhook_secret,
        )
        if answer.status_code >= 300:
            raise RuntimeError(
                f"the tracker refused {command!r} on #{number}: {answer.status_code} {answer.text}"
            )


def demo_github(toy: ToyRepository) -> DemoGithub:
    """The demo's GitHub for ``toy``, with a new App key and webhook secret."""
    key = new_app_key()
    return DemoGithub(seeded_fake(toy, key), key, secrets.token_urlsafe(24))


def new_app_key() -> AppKey:
    """A fresh RSA key for this demo's App (GitHub Apps sign their tokens with RS256)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return AppKey(private_pem=private, public_pem=public.decode())


def seeded_fake(toy: ToyRepository, key: AppKey) -> FakeGithub:
    """The fake GitHub holding the toy repository's pull requests, merged and open, and its maintainer."""
    fake = FakeGithub(app_public_key=key.public_pem, clock=lambda: dt.datetime.now(dt.UTC))
    fake.permissions[(REPOSITORY, MAINTAINER)] = "maintain"
    for parent, commit in zip(toy.commits, toy.commits[1:], strict=False):
        number = pull_number_in(commit.title)
        if number is None:
            continue
        files = _changed_files(toy, parent.sha, commit.sha)
        fake.add_pull(REPOSITORY, number, head_sha=commit.sha, merge_base=parent.sha, files=files)
        fake.pulls[(REPOSITORY, number)].update(state="closed", merged=True)
    for pull in toy.pull_requests:
        files = _changed_files(toy, pull.base_sha, pull.head_sha)
        fake.add_pull(REPOSITORY, pull.number, head_sha=pull.head_sha, merge_base=pull.base_sha, files=files)
    return fake


def git_redirect(toy: ToyRepository) -> dict[str, str]:
    """Environment that makes git fetch the repository's GitHub address from the local toy repository
    (``url.<path>.insteadOf``, given as ``GIT_CONFIG_*`` so that no git config file changes)."""
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{toy.path.resolve()}.insteadOf",
        "GIT_CONFIG_VALUE_0": GITHUB_URL,
    }


def _changed_files(toy: ToyRepository, base: str, head: str) -> list[str]:
    listed = subprocess.run(
        ["git", "diff", "--name-only", base, head], cwd=toy.path, check=True, capture_output=True, text=True
    )
    return listed.stdout.split()
