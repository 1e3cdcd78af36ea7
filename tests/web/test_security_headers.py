"""Every answer carries the security headers; pages run no inline code, so the CSP needs none; no
URL in a page is built from the request's Host header."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web.headers import DOCS_POLICY, PAGE_POLICY

TEMPLATES = Path(__file__).resolve().parents[2] / "web" / "templates"


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {words[0]: words[1:] for words in parsed}


@pytest.mark.parametrize(
    "path", ["/", "/alerts", "/login", "/jobs", "/api/v1/alerts", "/healthz", "/no/such/page"]
)
def test_answers_carry_the_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    policy = directives(response.headers["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]


def test_a_refusal_by_the_body_limit_carries_them_too(client: TestClient) -> None:
    response = client.post("/api/v1/results", content=b"x" * (3 * 1024 * 1024))
    assert response.status_code == 413
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in response.headers


def test_only_the_api_docs_may_run_their_inline_starter(client: TestClient) -> None:
    assert client.get("/docs").headers["Content-Security-Policy"] == DOCS_POLICY
    assert client.get("/redoc").headers["Content-Security-Policy"] == DOCS_POLICY
    assert client.get("/docsx").headers["Content-Security-Policy"] == PAGE_POLICY
    assert "'unsafe-inline'" not in directives(PAGE_POLICY)["script-src"]


@pytest.mark.parametrize("template", sorted(path.name for path in TEMPLATES.glob("*.html")))
def test_templates_hold_no_inline_code(template: str) -> None:
    html = (TEMPLATES / template).read_text()
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    assert not re.search(r"\son[a-z]+\s*=", html), "an inline event handler"
    assert "javascript:" not in html
    assert not re.search(r"<style\b", html)


def test_no_url_in_a_page_comes_from_the_host_header(client: TestClient) -> None:
    for path in ("/", "/login", "/alerts"):
        page = client.get(path, headers={"Host": "evil.example"})
        assert page.status_code == 200
        assert "evil.example" not in page.text, path
        assert 'src="/static/forms.js"' in page.text
