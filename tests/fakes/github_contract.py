"""The fake GitHub and the bot, held to GitHub's own published description.

``tests/data/github/contract`` holds a trimmed copy of the description GitHub publishes on npm
(``@octokit/openapi``, ``@octokit/openapi-webhooks``), written by
``scripts/github_contract_extract.py``. Every exchange the fake records is checked here:

- the bot's request names an operation the description has (method and path template, query
  parameters it lists), with a body its request schema accepts;
- the fake's answer validates against that operation's schema for its status: a documented status
  by its own schema, any other error by GitHub's ``basic-error``; a rate-limited answer (``retry-after``
  or ``x-ratelimit-remaining: 0``) is a 403 or 429 carrying the rate-limit headers GitHub documents,
  as integers. Answers are held to their schema closed: a field the description does not name is
  refused, so the bot never comes to rely on a field only the fake sends.

Webhook payloads are checked against the event's schema as published (open: GitHub adds fields).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema_rs

CONTRACT = Path(__file__).resolve().parents[1] / "data" / "github" / "contract"
ENTERPRISE_PREFIX = "/api/v3"
_RATE_LIMIT_STATUSES = (403, 429)


@dataclass(frozen=True)
class Exchange:
    """One request the bot sent to the fake and the fake's answer."""

    method: str
    path: str  # as sent: the path and its query string
    body: Any  # the request's JSON (None: no body)
    status: int
    headers: dict[str, str]  # the answer's headers, names in lower case
    answer: Any  # the answer's JSON (None: no body)


@functools.cache
def rest() -> dict[str, Any]:
    """The trimmed REST description."""
    described: dict[str, Any] = json.loads((CONTRACT / "openapi-trimmed.json").read_text())
    return described


@functools.cache
def webhooks() -> dict[str, Any]:
    """The trimmed webhook description."""
    described: dict[str, Any] = json.loads((CONTRACT / "webhooks-trimmed.json").read_text())
    return described


def operation(method: str, path: str) -> dict[str, Any] | None:
    """The described operation a request names (``None``: GitHub has no such operation)."""
    route = urlsplit(path).path.removeprefix(ENTERPRISE_PREFIX)
    operations: list[dict[str, Any]] = rest()["operations"]
    for described in operations:
        if described["method"] == method.upper() and _template(described["path"]).fullmatch(route):
            return described
    return None


def problems(exchange: Exchange) -> list[str]:
    """What in the exchange GitHub's description refuses, each naming the request."""
    described = operation(exchange.method, exchange.path)
    where = f"{exchange.method} {exchange.path}"
    if described is None:
        return [f"{where}: GitHub has no such operation"]
    found = _request_problems(described, exchange) + _answer_problems(described, exchange)
    return [f"{where} ({described['operationId']}): {problem}" for problem in found]


def event_problems(event: str, payload: Any) -> list[str]:
    """What in a webhook payload the event's published schema refuses (``event``: the
    ``X-GitHub-Event`` header; the action is read from the payload)."""
    action = payload.get("action") if isinstance(payload, dict) else None
    name = f"{event}.{action}" if action else event
    schema = webhooks()["events"].get(name)
    if schema is None:
        return [f"{name}: not in the trimmed webhook description (scripts/github_contract_extract.py)"]
    return _errors(_validator(json.dumps(schema), closed=False, source="webhooks"), payload)


def _request_problems(described: dict[str, Any], exchange: Exchange) -> list[str]:
    found = []
    allowed = set(described["query"])
    for name, _value in parse_qsl(urlsplit(exchange.path).query, keep_blank_values=True):
        if name not in allowed:
            found.append(f"query parameter {name!r} is not one of {sorted(allowed)}")
    schema = described["requestBody"]
    if schema is None:
        if exchange.body is not None:
            found.append("a body was sent to an operation that takes none")
        return found
    if exchange.body is not None:
        validator = _validator(json.dumps(schema), closed=True, source="rest")
        found.extend(f"request body: {error}" for error in _errors(validator, exchange.body))
    return found


def _answer_problems(described: dict[str, Any], exchange: Exchange) -> list[str]:
    status = exchange.status
    documented = described["responses"].get(str(status))
    if documented is None and status < 400:
        return [f"answered {status}, which GitHub does not give here ({sorted(described['responses'])})"]
    schema = documented["schema"] if documented is not None else rest()["error"]
    found = [f"answer {status}: {error}" for error in _answer_errors(schema, exchange.answer)]
    if documented is not None:
        found.extend(_header_problems(documented["headers"], exchange.headers))
    if _rate_limited(exchange.headers):
        found.extend(_rate_limit_problems(exchange))
    return found


def _answer_errors(schema: dict[str, Any], answer: Any) -> list[str]:
    if not schema:
        return []
    return _errors(_validator(json.dumps(schema), closed=True, source="rest"), answer)


def _header_problems(documented: dict[str, Any], headers: dict[str, str]) -> list[str]:
    found = []
    for name, schema in documented.items():
        if name in headers and schema.get("type") == "integer" and not headers[name].isdigit():
            found.append(f"header {name}: {headers[name]!r} is not an integer")
    return found


def _rate_limited(headers: dict[str, str]) -> bool:
    return "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"


def _rate_limit_problems(exchange: Exchange) -> list[str]:
    """GitHub's rate limits answer 403 or 429 with the documented headers, as integers."""
    found = []
    if exchange.status not in _RATE_LIMIT_STATUSES:
        found.append(f"a rate limit answers 403 or 429, not {exchange.status}")
    for name, schema in rest()["rate_limit_headers"].items():
        value = exchange.headers.get(name.lower())
        if value is None:
            found.append(f"a rate-limited answer carries {name}")
        elif schema.get("type") == "integer" and not value.isdigit():
            found.append(f"header {name}: {value!r} is not an integer")
    retry_after = exchange.headers.get("retry-after")
    if retry_after is not None and not retry_after.isdigit():
        found.append(f"retry-after: {retry_after!r} is not a number of seconds")
    return found


def _errors(validator: Any, instance: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.instance_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(instance)
    ][:10]


@functools.cache
def _validator(schema_text: str, *, closed: bool, source: str) -> Any:
    """A validator of the schema, its ``$ref``s resolved in the trimmed description's ``$defs``."""
    defs = (rest() if source == "rest" else webhooks())["$defs"]
    root = {"$defs": _closed(copy.deepcopy(defs)) if closed else defs, "allOf": [json.loads(schema_text)]}
    if closed:
        root["allOf"] = _closed(root["allOf"])
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def _closed(node: Any) -> Any:
    """Every object schema that lists its properties refuses others (unless it says otherwise)."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    closed = {
        key: (
            {name: _closed(item) for name, item in value.items()} if key == "properties" else _closed(value)
        )
        for key, value in node.items()
    }
    if isinstance(node.get("properties"), dict) and "additionalProperties" not in node:
        closed["additionalProperties"] = False
    return closed


@functools.cache
def _template(path: str) -> re.Pattern[str]:
    """A path template (``/repos/{owner}/{repo}``) as a pattern of the paths it names."""
    return re.compile(re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path)))
