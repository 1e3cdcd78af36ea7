"""Token-shaped secrets taken out of what a run stores: its raw log, command line and environment.

Logs and commands are served to anyone who can read the dashboard (``/api/v1/runs/{id}/log``), so a
token a benchmark printed, or passed on its command line, is replaced by ``[redacted]`` before the
run is written. What counts as a secret:

- tokens by their shape: perftrack (``pt_...``), GitHub (``ghp_``, ``gho_``, ``ghs_``, ``ghu_``,
  ``ghr_``, ``github_pat_``), Hugging Face (``hf_...``);
- credentials in headers: ``Authorization: Bearer ...`` / ``token ...`` / ``Basic ...``, and any
  ``Bearer ...`` credential;
- the value of an assignment or flag whose name ends in TOKEN, SECRET, PASSWORD, PASSWD or KEY
  (``HF_TOKEN=...``, ``PGPASSWORD=...``, ``api_key='...'``, ``--hf-token ...``), but not
  ``TOKENIZERS_PARALLELISM``, ``max_tokens`` or ``num_key_value_heads``;
- in the environment mapping, every string under such a key.

Redaction is deterministic and idempotent; numbers and booleans are never touched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracker.access.tokens import TOKEN_PREFIX

REDACTED = "[redacted]"

# A name ending in one of these words names a secret: HF_TOKEN, PGPASSWORD, api_key, --hf-token.
_SECRET_NAME = r"(?:[A-Za-z0-9]+[_-])*[A-Za-z0-9]*(?:token|secret|password|passwd|key)"  # noqa: S105 - a pattern, not a secret
_VALUE = rf"(?:{re.escape(REDACTED)}|\"[^\"\n]*\"|'[^'\n]*'|[^\s'\",;)}}\]]+)"
_EMPTY_VALUES = frozenset({"", "''", '""', "None", "none", "null", "NULL", REDACTED})

# Token shapes, each bounded on the left so "xpt_..." inside a word is left alone.
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    rf"{re.escape(TOKEN_PREFIX)}[A-Za-z0-9_\-]{{16,}}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|hf_[A-Za-z0-9]{20,}"
    r")"
)
_AUTHORIZATION = re.compile(
    r"(?i)\b((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(bearer|token|basic)\s+)?([^\s'\",}]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")
_ASSIGNMENT = re.compile(rf"(?i)(?<![A-Za-z0-9_\-])({_SECRET_NAME})(\s*=\s*)({_VALUE})")
_FLAG = re.compile(rf"(?i)(?<![A-Za-z0-9_\-])(--{_SECRET_NAME})(\s*=\s*|\s+)(?!-)({_VALUE})")
_SECRET_KEY = re.compile(rf"(?i)^{_SECRET_NAME}$")


def redact_text(text: str) -> str:
    """``text`` with every token-shaped or assigned secret replaced by ``[redacted]``."""
    if not text:
        return text
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _AUTHORIZATION.sub(_authorization, text)
    text = _BEARER.sub(lambda match: f"{match[1]} {REDACTED}", text)
    text = _ASSIGNMENT.sub(_assignment, text)
    return _FLAG.sub(_assignment, text)


def is_secret_name(name: str) -> bool:
    """Whether a variable, flag or key name says its value is a secret (``HF_TOKEN``, ``api-key``)."""
    return bool(_SECRET_KEY.match(name.lstrip("-")))


def redact_environment(environment: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``environment``: strings under secret-named keys replaced, other strings redacted."""
    return {str(key): _redact_value(str(key), value) for key, value in environment.items()}


def _redact_value(key: str, value: Any) -> Any:
    # Depth is bounded by the upload schema (MAX_JSON_DEPTH), so recursing here is safe.
    if isinstance(value, str):
        return REDACTED if value and is_secret_name(key) else redact_text(value)
    if isinstance(value, Mapping):
        return {str(name): _redact_value(str(name), item) for name, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(key, item) for item in value]
    return value


def _authorization(match: re.Match[str]) -> str:
    scheme = f"{match[2]} " if match[2] else ""
    return f"{match[1]}{scheme}{REDACTED}"


def _assignment(match: re.Match[str]) -> str:
    value = match[3]
    if value in _EMPTY_VALUES:
        return match[0]
    quote = value[0] if value[0] in "'\"" and len(value) > 1 else ""
    return f"{match[1]}{match[2]}{quote}{REDACTED}{quote}"
