"""Extract the trimmed copy of GitHub's published API description that the GitHub contract tests use.

GitHub publishes its REST API (OpenAPI 3.0) and its webhook payloads (OpenAPI 3.1) as the npm
packages ``@octokit/openapi`` and ``@octokit/openapi-webhooks``. This script downloads a pinned
version of each with ``npm pack`` into a temporary folder and writes two self-contained JSON files:

- ``openapi-trimmed.json``: only the operations the bot calls (:data:`OPERATIONS`), with their
  request-body and response schemas, the rate-limit headers GitHub documents, and the component
  schemas those reach (under ``$defs``, OpenAPI 3.0's ``nullable`` turned into JSON Schema);
- ``webhooks-trimmed.json``: only the webhook events the tests send (:data:`EVENTS`).

Run it when the bot calls a new operation or the tests send a new event (npm is needed here, never
in CI, which checks against the committed files)::

    python scripts/github_contract_extract.py            # writes tests/data/github/contract/
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

OPENAPI_PACKAGE = "@octokit/openapi"
OPENAPI_VERSION = "23.0.2"
WEBHOOKS_PACKAGE = "@octokit/openapi-webhooks"
WEBHOOKS_VERSION = "12.1.0"
DESCRIPTION_FILE = "package/generated/api.github.com.json"
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "github" / "contract"

# The REST operations tracker/github calls: (method, path template as GitHub names it).
OPERATIONS = [
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("get", "/app"),
    ("get", "/user"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
]
# The webhook events the tests send: the X-GitHub-Event header and the payload's action.
EVENTS = [
    ("ping", None),
    ("issues", "opened"),
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("pull_request", "synchronize"),
    ("pull_request", "labeled"),
    ("pull_request", "closed"),
    ("check_run", "requested_action"),
    ("check_run", "rerequested"),
]
# Annotations the checks never read: dropped to keep the copy small.
_DROPPED = {"description", "example", "examples", "title", "externalDocs", "summary"}
_COMPONENT_REF = re.compile(r"^#/components/schemas/(.+)$")


def main() -> None:
    """Download the pinned packages and write the trimmed copies."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the two JSON files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        rest = _download(OPENAPI_PACKAGE, OPENAPI_VERSION, Path(folder))
        hooks = _download(WEBHOOKS_PACKAGE, WEBHOOKS_VERSION, Path(folder))
    _write(args.out / "openapi-trimmed.json", trim_rest(rest))
    _write(args.out / "webhooks-trimmed.json", trim_webhooks(hooks))


def _download(package: str, version: str, folder: Path) -> dict[str, Any]:
    """The package's description of api.github.com, from ``npm pack`` of the pinned version."""
    where = folder / package.replace("/", "_")
    where.mkdir()
    packed = subprocess.run(
        ["npm", "pack", f"{package}@{version}", "--silent", "--pack-destination", str(where)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tarfile.open(where / packed.splitlines()[-1]) as archive:
        member = archive.extractfile(DESCRIPTION_FILE)
        if member is None:
            raise SystemExit(f"{package}@{version} has no {DESCRIPTION_FILE}")
        description: dict[str, Any] = json.load(member)
    return description


def trim_rest(description: dict[str, Any]) -> dict[str, Any]:
    """The operations of :data:`OPERATIONS`, self-contained, in JSON Schema."""
    components = description["components"]
    operations = []
    for method, path in OPERATIONS:
        operation = description["paths"][path][method]
        body = operation.get("requestBody")
        operations.append(
            {
                "method": method.upper(),
                "path": path,
                "operationId": operation["operationId"],
                "query": _query_parameters(operation, components),
                "requestBody": _json_schema(body, components) if body is not None else None,
                "responses": {
                    status: _response(answer, components) for status, answer in operation["responses"].items()
                },
            }
        )
    rate_limit = description["paths"]["/rate_limit"]["get"]["responses"]["200"]["headers"]
    headers = {name: _resolve(header, components)["schema"] for name, header in rate_limit.items()}
    trimmed = {
        "source": _source(OPENAPI_PACKAGE, OPENAPI_VERSION, description),
        "operations": operations,
        "rate_limit_headers": headers,
        "error": {"$ref": "#/$defs/basic-error"},
    }
    trimmed["$defs"] = _reached(trimmed, components["schemas"], convert=_from_openapi_30)
    return trimmed


def trim_webhooks(description: dict[str, Any]) -> dict[str, Any]:
    """The event payload schemas of :data:`EVENTS`, self-contained (already JSON Schema: 3.1)."""
    events = {}
    for event, action in EVENTS:
        key = (event + (f"-{action}" if action else "")).replace("_", "-")
        body = description["webhooks"][key]["post"]["requestBody"]
        events[f"{event}.{action}" if action else event] = _strip(
            body["content"]["application/json"]["schema"]
        )
    trimmed: dict[str, Any] = {
        "source": _source(WEBHOOKS_PACKAGE, WEBHOOKS_VERSION, description),
        "events": events,
    }
    trimmed["$defs"] = _reached(trimmed, description["components"]["schemas"], convert=_strip)
    return trimmed


def _source(package: str, version: str, description: dict[str, Any]) -> dict[str, str]:
    return {
        "package": package,
        "version": version,
        "file": DESCRIPTION_FILE.removeprefix("package/"),
        "openapi": description["openapi"],
        "extracted_by": "python scripts/github_contract_extract.py",
    }


def _json_schema(body: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A request body's (or response's) JSON schema, converted; ``{}`` when it has none."""
    content = _resolve(body, components).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return _from_openapi_30(schema) if schema is not None else {}


def _query_parameters(operation: dict[str, Any], components: dict[str, Any]) -> list[str]:
    """The names of the query parameters the operation takes."""
    parameters = [_resolve(parameter, components) for parameter in operation.get("parameters", [])]
    return [parameter["name"] for parameter in parameters if parameter["in"] == "query"]


def _response(answer: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    resolved = _resolve(answer, components)
    headers = {
        name.lower(): _from_openapi_30(_resolve(header, components)["schema"])
        for name, header in resolved.get("headers", {}).items()
    }
    return {"schema": _json_schema(resolved, components), "headers": headers}


def _resolve(item: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI response, body or header, with its own ``$ref`` (to ``#/components/...``) followed."""
    while "$ref" in item:
        _, _, kind, name = item["$ref"].split("/")
        item = components[kind][name]
    return item


def _reached(root: Any, schemas: dict[str, Any], *, convert: Any) -> dict[str, Any]:
    """The component schemas ``root`` reaches through ``$ref``, converted, refs pointing at ``$defs``."""
    found: dict[str, Any] = {}
    pending = list(_refs(root))
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found[name] = convert(schemas[name])
        pending.extend(_refs(found[name]))
    return dict(sorted(found.items()))


def _refs(node: Any) -> list[str]:
    """The component names of the ``$ref``s in ``node``, rewriting each to ``#/$defs/<name>``."""
    names: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            match = _COMPONENT_REF.match(ref) or re.match(r"^#/\$defs/(.+)$", ref)
            if match is None:
                raise SystemExit(f"unexpected $ref {ref}")
            node["$ref"] = f"#/$defs/{match.group(1)}"
            names.append(match.group(1))
        for value in node.values():
            names.extend(_refs(value))
    elif isinstance(node, list):
        for value in node:
            names.extend(_refs(value))
    return names


def _strip(node: Any) -> Any:
    """``node`` without annotations and ``x-`` extensions."""
    return _convert(node, nullable=False)


def _from_openapi_30(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable: true`` becomes a ``null`` alternative."""
    return _convert(node, nullable=True)


def _convert(node: Any, *, nullable: bool) -> Any:
    if isinstance(node, list):
        return [_convert(value, nullable=nullable) for value in node]
    if not isinstance(node, dict):
        return node
    schema: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            schema[key] = {name: _convert(item, nullable=nullable) for name, item in value.items()}
        elif key not in _DROPPED and not key.startswith("x-") and not (nullable and key == "nullable"):
            schema[key] = _convert(value, nullable=nullable)
    if not (nullable and node.get("nullable") is True):
        return schema
    if isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _write(path: Path, trimmed: dict[str, Any]) -> None:
    path.write_text(json.dumps(trimmed, indent=1, sort_keys=False) + "\n")
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB, {len(trimmed['$defs'])} schemas)")


if __name__ == "__main__":
    main()
