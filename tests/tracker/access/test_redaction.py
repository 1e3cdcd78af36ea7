"""Secrets taken out of stored logs, commands and environments: token shapes, credential headers,
secret-named assignments, and nothing else."""

from __future__ import annotations

import pytest

from tracker.access.redaction import REDACTED, is_secret_name, redact_environment, redact_text

GH = "ghp_" + "A1b2" * 9
HF = "hf_" + "AbCdEfGhIj" * 3 + "klmn"
PT = "pt_" + "Q7x-_9" * 7 + "z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token {PT} used", "token [redacted] used"),
        (f"{GH} gho_{'x' * 36} ghs_{'y' * 36} ghu_{'z' * 36}", "[redacted] [redacted] [redacted] [redacted]"),
        ("github_pat_11ABC" + "d" * 70, REDACTED),
        (f"login {HF}", "login [redacted]"),
        ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"),
        ("authorization: token abcdef123", "authorization: token [redacted]"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"),
        ('{"Authorization": "raw-credential"}', '{"Authorization": "[redacted]"}'),
        ("sent Bearer abcdefgh12345", "sent Bearer [redacted]"),
        ("HF_TOKEN=abc sglang generate", "HF_TOKEN=[redacted] sglang generate"),
        ("export GITHUB_TOKEN='abc def'", "export GITHUB_TOKEN='[redacted]'"),
        (
            'PGPASSWORD="p w" AWS_SECRET_ACCESS_KEY=a/b+c',
            'PGPASSWORD="[redacted]" AWS_SECRET_ACCESS_KEY=[redacted]',
        ),
        ("ServerArgs(api_key='sk-1', hf_token=None)", "ServerArgs(api_key='[redacted]', hf_token=None)"),
        (
            "--hf-token abc --api-key=def --key-cache on",
            "--hf-token [redacted] --api-key=[redacted] --key-cache on",
        ),
        ("--use-api-key --port 30000", "--use-api-key --port 30000"),
    ],
)
def test_redacts_secrets(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "TOKENIZERS_PARALLELISM=false num_key_value_heads=8 max_tokens=12 max_total_tokens=4096",
        "Bearer token refresh failed; 16 tokens per block",
        f"x{PT} not a token on its own",
        "gho_short hf_short pt_short",
        "[DenoisingStage] finished in 13.1895 seconds",
        "",
    ],
)
def test_leaves_ordinary_text_alone(text: str) -> None:
    assert redact_text(text) == text


def test_redaction_is_idempotent() -> None:
    text = f"HF_TOKEN={HF} Authorization: Bearer {GH} api_key='x' --hf-token y PGPASSWORD=z"
    once = redact_text(text)
    assert redact_text(once) == once
    assert HF not in once
    assert GH not in once


def test_environment_keys_and_values() -> None:
    environment = {
        "gpu": "H200",
        "HF_TOKEN": "anything",
        "api-key": "v",
        "gpu_count": 8,
        "key": 5,
        "nested": {"db_password": "pw", "argv": f"--token {PT}", "list": [GH, 1.5, True, None]},
    }
    assert redact_environment(environment) == {
        "gpu": "H200",
        "HF_TOKEN": REDACTED,
        "api-key": REDACTED,
        "gpu_count": 8,
        "key": 5,
        "nested": {
            "db_password": REDACTED,
            "argv": f"--token {REDACTED}",
            "list": [REDACTED, 1.5, True, None],
        },
    }
    assert environment["HF_TOKEN"] == "anything"  # a copy; the input is left as it was


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("PGPASSWORD", True),
        ("client_secret", True),
        ("--api-key", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("max_tokens", False),
        ("num_key_value_heads", False),
        ("gpu", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
