"""Secrets taken out of stored logs, commands and environments: token shapes, credential headers
and URLs, secret-named assignments, held secrets, and nothing else."""

from __future__ import annotations

import pytest

from tracker.access.redaction import REDACTED, Redactor, is_secret_name, redact_environment, redact_text

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
        ("HF_TOKEN_2", True),
        ("SECRET_KEY_BASE", True),
        ("X-Api-Key", True),
        ("PWD", False),
        ("tokenizer_path", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


GH36 = "ghp_" + "Zz9" * 12
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Xj" + "Qm9" * 20 + "\n" + "Ab3" * 20 + "\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Each was stored as it came before there was one redactor.
        ('{"api_key": "s3cr3t-v4lue", "n": 1}', '{"api_key": "[redacted]", "n": 1}'),
        ("HF_TOKEN: abcdef123", "HF_TOKEN: [redacted]"),
        ("  password: hunter2", "  password: [redacted]"),
        ("curl -H 'X-Api-Key: abc123def' host", "curl -H 'X-Api-Key: [redacted]' host"),
        (
            "clone https://perf:p4ssw0rd@git.example.org/sglang.git",
            "clone https://perf:[redacted]@git.example.org/sglang.git",
        ),
        (f"key file:\n{PEM}\ndone", "key file:\n[redacted]\ndone"),
        ("aws AKIAIOSFODNN7EXAMPLE ok", "aws [redacted] ok"),
        ("gitlab glpat-" + "x1Y2z3" * 4, "gitlab [redacted]"),
        (f"GET /cb?state=1&token%3D{GH36}", "GET /cb?state=1&token%3D[redacted]"),
        (f"GET /cb?t%3D{PT}", "GET /cb?t%3D[redacted]"),
        (f"x{GH36} y", "x[redacted] y"),
        (f"a_{GH36} 7{GH36}", "a_[redacted] 7[redacted]"),
        (f"token \x1b[1mgh\x1b[0mp_{'Zz9' * 12}\x1b[0m", "token [redacted]"),
        ("slack xoxb-1234567890-abcdefghij", "slack [redacted]"),
        ("openai sk-proj-" + "aB3" * 10, "openai [redacted]"),
        ("google AIza" + "Sy0" * 11 + "xy", "google [redacted]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sflKxwRJSMeKKF2QT4fwpM", "jwt [redacted]"),
        (
            "env: HF_TOKEN=abc DB_PASSWORD_FILE=/run/pw",
            "env: HF_TOKEN=[redacted] DB_PASSWORD_FILE=[redacted]",
        ),
    ],
)
def test_redacts_what_one_redactor_knows(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "prompt_template_for_the_qwen_image_pipeline max_tokens: 512 Stage: DenoisingStage",
        "https://github.com/sgl-project/sglang/pull/43601 at 10:00:00",
        "disk-usage-0123456789abcdefghij task-0123456789abcdefghijk",
        "\x1b[32mINFO\x1b[0m server started",
        "PWD=/home/perf OLDPWD=/tmp key_count=3",
        '{"key": {"rope_theta": 1}, "secret_scanning": [1]}',
    ],
)
def test_the_one_redactor_leaves_ordinary_text_alone(text: str) -> None:
    assert redact_text(text) == text


def test_held_secrets_are_redacted_wherever_they_appear() -> None:
    webhook, session = "whsec-0123456789abcdef", "sess-9876543210fedcba"
    redactor = Redactor([webhook, session, PEM])
    text = f"signed with {webhook}; cookie secret={session}x; {PEM.splitlines()[1]}"
    assert redactor.text(text) == "signed with [redacted]; cookie secret=[redacted]x; [redacted]"


def test_environment_keys_that_hold_or_name_a_secret() -> None:
    environment = {GH36: "x", "SECRET_KEY_BASE": "abc", "HF_TOKEN_2": "def", "gpu": "H200", "key_count": 3}
    assert redact_environment(environment) == {
        REDACTED: REDACTED,
        "SECRET_KEY_BASE": REDACTED,
        "HF_TOKEN_2": REDACTED,
        "gpu": "H200",
        "key_count": 3,
    }


@pytest.mark.parametrize(
    "line",
    [
        "a" * (1 << 20),
        "eyJ" * (1 << 18),
        "a=" * (1 << 19),
        "x:" * (1 << 19),
        "\x1b[" * (1 << 19),
        "\x1b]" + "a" * (1 << 20),
        "-----BEGIN RSA PRIVATE KEY-----\n" * (1 << 15),
        "https://" + "a:" * (1 << 19),
        "ghp_" * (1 << 18),
        "--token " * (1 << 17),
        'password: "' + "a" * (1 << 20),
        "authorization" + " " * (1 << 20),
    ],
)
def test_a_megabyte_of_adversarial_text_is_redacted(line: str) -> None:
    """Each pattern is linear: these finish (their time is benchmarks' business, not a test's)."""
    once = Redactor(["held-secret-value"]).text(line)
    assert Redactor(["held-secret-value"]).text(once) == once
