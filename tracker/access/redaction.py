"""The one redactor: secrets taken out of whatever the tracker stores, logs or answers.

Stored runs (raw log, command line, warnings, failure reason, environment, perf dump), log records
and error responses all go through :class:`Redactor`, so a secret one of them would hide is hidden
by all. Logs and commands are served to anyone who can read the dashboard
(``/api/v1/runs/{id}/log``), and an error message may quote what its caller sent. What counts as a
secret, replaced by ``[redacted]``:

- every secret the tracker itself holds (:func:`secret_values`: the admin, metrics and GitHub
  tokens, the webhook and session secrets, the App's private key line by line, the database
  password), wherever its literal value appears;
- tokens by their shape, the families secret scanners (detect-secrets, gitleaks) know: perftrack
  ``pt_``; GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and ``github_pat_``; GitLab
  ``glpat-`` and its siblings; AWS access key ids (``AKIA...``); Slack ``xox?-``; OpenAI ``sk-``;
  Hugging Face ``hf_``; Google ``AIza``; npm, PyPI and Stripe keys; JSON Web Tokens; PEM private
  key blocks. The distinctive prefixes are found inside a word too (``TOKEN=ghp_...``,
  ``a_ghp_...``, ``%3Dghp_...``);
- credentials in headers and URLs: ``Authorization: Bearer ...`` / ``token ...`` / ``Basic ...``,
  any ``Bearer ...`` or ``Basic ...`` credential, ``Cookie:`` values, ``https://user:PASSWORD@host``;
- the value of an assignment, a ``key: value`` pair, a JSON member or a flag whose name says secret
  (:func:`is_secret_name`: ``HF_TOKEN=...``, ``password: ...``, ``"api_key": "..."``,
  ``X-Api-Key: ...``, ``--hf-token ...``), but not ``TOKENIZERS_PARALLELISM``, ``max_tokens`` or
  ``num_key_value_heads``;
- in a mapping (an environment, a perf dump), every string under a secret-named key or under a
  key that itself held a secret; keys are redacted like any text.

Terminal colour codes are seen through: text in which a secret shows once they are taken out
(a token split by one) is redacted without them. Redaction is deterministic and idempotent; numbers and booleans are never touched. Every
pattern is linear in its input (bounded repeats, no nested open-ended ones), so a megabyte line
costs a single pass per pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import SecretStr
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tracker.access.tokens import TOKEN_PREFIX
from tracker.settings import Settings

REDACTED = "[redacted]"
_MIN_SECRET_LENGTH = 8  # shorter held values would redact ordinary words; real secrets are much longer

# CSI (colours, cursor), OSC (titles, links) and two-character escapes, as a terminal reads them.
_ANSI = re.compile(r"\x1b(?:\[[0-?]{0,64}[ -/]{0,16}[@-~]|\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)|[@-Z\\-_])")

# Left of a token: no letter or digit (a word of its own), or right after an encoded "=".
_ALONE = r"(?:(?<![A-Za-z0-9])|(?<=%3[Dd]))"
_TOKEN_SHAPES = re.compile(
    "(?:"
    rf"{_ALONE}{re.escape(TOKEN_PREFIX)}[A-Za-z0-9_\-]{{16,}}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat|ffct|agent)-[A-Za-z0-9_\-]{20,}"
    r"|(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])"
    r"|xox[abeoprs]-[A-Za-z0-9\-]{10,}"
    r"|xapp-[0-9]-[A-Za-z0-9\-]{10,}"
    rf"|{_ALONE}sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,}}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-AgE[A-Za-z0-9_\-]{50,}"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    ")"
)
_PEM_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
    r"[\s\S]*?(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|\Z)"
)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,20}://[^\s/:@'\"]{0,256}:)([^\s/@'\"]{1,512})(@)")
_AUTHORIZATION = re.compile(
    r"(?i)\b((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)(?:(bearer|token|basic)\s+)?([^\s'\",}]+)"
)
_COOKIE = re.compile(r"(?i)\b((?:set-)?cookie['\"]?\s*[:=]\s*['\"]?)([^'\"\n,}]+)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")  # credentials, not "bearer token"

# A name, then what sets it: ``NAME=``, ``NAME: ``, ``"NAME": `` and flags ``--name ``; the value
# that follows (:data:`_VALUE`) is replaced when the name says secret (:func:`is_secret_name`).
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(-{0,2}[A-Za-z][A-Za-z0-9_.\-]{0,255})(['\"]?[ \t]{0,16}[:=][ \t]{0,16})"
)
_FLAG = re.compile(r"(?<![A-Za-z0-9_.\-])(--[A-Za-z][A-Za-z0-9_.\-]{0,255})([ \t]{1,16})(?!-)")
# Each alternative takes what it can and never fails after its first character: linear. A value
# opening an object or a list (``"key": {``) is a structure, not a secret: its members are seen alone.
_VALUE = re.compile(rf"{re.escape(REDACTED)}|\"[^\"\n]*\"?|'[^'\n]*'?|[^\s'\",;)}}\]{{\[][^\s'\",;)}}\]]*")
_EMPTY_VALUES = frozenset({"", "''", '""', "None", "none", "null", "NULL", REDACTED})

# A name is secret when its last part ends in one of these (HF_TOKEN, PGPASSWORD, x-api-key) ...
_SECRET_ENDING = re.compile(r"(?i)(?:token|secret|password|passwd|key|credentials?|cookie)$")
# ... or when any part is one of these (SECRET_KEY_BASE, DB_PASSWORD_FILE, HF_TOKEN_2).
_SECRET_PARTS = frozenset({"secret", "password", "passwd", "credential", "credentials", "apikey"})
_NAME_PARTS = re.compile(r"[_.\-]+")
# Log records' extra fields are dropped whole when their name mentions any of these.
_LOG_SECRET_KEY = re.compile(r"(?i)(authorization|cookie|token|secret|password|passwd|api_key|private_key)")


def is_secret_name(name: str) -> bool:
    """Whether a variable, flag or key name says its value is a secret (``HF_TOKEN``, ``api-key``)."""
    parts = [part for part in _NAME_PARTS.split(name.strip().lower()) if part]
    if not parts:
        return False
    if len(parts) > 1 and parts[-1].isdigit():  # HF_TOKEN_2
        parts = parts[:-1]
    return bool(_SECRET_ENDING.search(parts[-1])) or any(part in _SECRET_PARTS for part in parts)


class Redactor:
    """Replaces secrets in text and in mappings: the given literal values, token shapes, credential
    headers and URLs, and secret-named assignments (see the module's description)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {value for value in secrets if len(value) >= _MIN_SECRET_LENGTH}
        for value in list(values):  # a multi-line secret (a PEM key) may be printed a line at a time
            values.update(line.strip() for line in value.splitlines() if len(line.strip()) >= 16)
        # Longest first, so a secret containing another is replaced whole.
        self.secrets = sorted(values, key=len, reverse=True)

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by ``[redacted]``; a secret that terminal escapes
        split (``gh\\x1b[0mp_...``) is found through them, and then the escapes are dropped."""
        if not value:
            return value
        if "\x1b" in value:
            plain = _ANSI.sub("", value)
            redacted = self._text(plain)
            if redacted != plain:
                return redacted
        return self._text(value)

    def _text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        value = _PEM_KEY.sub(REDACTED, value)
        value = _TOKEN_SHAPES.sub(REDACTED, value)
        value = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}\g<3>", value)
        value = _AUTHORIZATION.sub(_authorization, value)
        value = _COOKIE.sub(rf"\g<1>{REDACTED}", value)
        value = _BEARER.sub(rf"\g<1> {REDACTED}", value)
        value = _assignments(value, _ASSIGNMENT)
        return _assignments(value, _FLAG)

    def mapping(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``values`` (an environment, a perf dump): keys redacted as text, strings under a
        secret-named key (or a key that held a secret) replaced whole, other strings redacted."""
        copy: dict[str, Any] = {}
        for key, item in values.items():
            name = str(key)
            shown = self.text(name)
            copy[shown] = self._item(shown != name or is_secret_name(name), item)
        return copy

    def _item(self, secret: bool, value: Any) -> Any:
        # Depth is bounded by the upload schema (MAX_JSON_DEPTH), so recursing here is safe.
        if isinstance(value, str):
            return REDACTED if value and secret else self.text(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if isinstance(value, list | tuple):
            return [self._item(secret, item) for item in value]
        return value

    def value(self, key: str, value: Any) -> Any:
        """A log record's extra field, redacted: whole when its name mentions a secret, else as text.

        Numbers, booleans and ``None`` stay as they are; any other object is logged as its redacted
        ``str()`` (a formatter would write ``str()`` anyway, secrets and all).
        """
        if value is None or isinstance(value, bool | int | float):
            return value
        if _LOG_SECRET_KEY.search(key) or is_secret_name(key):
            return REDACTED
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(key, item) for item in value]
        return self.text(str(value))


def secret_values(settings: Settings) -> list[str]:
    """Every secret the settings hold: each ``SecretStr`` field and the database password."""
    values = []
    for name in type(settings).model_fields:
        field = getattr(settings, name)
        if isinstance(field, SecretStr):
            values.append(field.get_secret_value())
    try:
        password = make_url(settings.effective_database_url).password
    except ArgumentError:
        password = None
    if password:
        values.append(str(password))
    return values


_PLAIN = Redactor()


def redact_text(text: str) -> str:
    """``text`` with every token-shaped or assigned secret replaced (no held secret: see :class:`Redactor`)."""
    return _PLAIN.text(text)


def redact_environment(environment: Mapping[str, Any]) -> dict[str, Any]:
    """:meth:`Redactor.mapping` of ``environment`` with no held secret."""
    return _PLAIN.mapping(environment)


def _authorization(match: re.Match[str]) -> str:
    scheme = f"{match[2]} " if match[2] else ""
    return f"{match[1]}{scheme}{REDACTED}"


def _assignments(text: str, names: re.Pattern[str]) -> str:
    """``text`` with the value after each secret name ``names`` finds replaced.

    Only the name and its ``=`` are matched, so a value that is not replaced (``env: HF_TOKEN=x``)
    is searched for names in turn.
    """
    pieces: list[str] = []
    last = 0
    for match in names.finditer(text):
        if match.start() < last or not is_secret_name(match[1]):
            continue
        value = _VALUE.match(text, match.end())
        if value is None or value[0] in _EMPTY_VALUES:
            continue
        pieces += [text[last : match.end()], _masked(value[0])]
        last = value.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _masked(value: str) -> str:
    """``[redacted]`` in the quotes ``value`` had."""
    quote = value[0] if value[0] in "'\"" else ""
    closing = quote if len(value) > 1 and value.endswith(quote) else ""
    return f"{quote}{REDACTED}{closing}"
