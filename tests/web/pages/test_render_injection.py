"""The bot's PR comment keeps user-controlled text literal: it cannot break the table, close a
code span, or add links, images, HTML or headings of its own (parsed with markdown-it, GFM tables)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from markdown_it import MarkdownIt
from markdown_it.token import Token
from sqlalchemy.orm import Session

from tracker.comparisons.summary import comparison_view
from tracker.github.render import code, plain, render_comment

HOSTILE = [
    "a | b | c",
    "`tick` and ``two`` ```",
    "<img src=x onerror=alert(1)> <script>window.pwned=1</script>",
    "[click](javascript:alert(1)) ![img](http://x/y.png) <https://evil.example>",
    "line one\n# not a heading\n| x | y |",
    "**bold** _em_ ~~del~~ @someone &amp; \\` \\|",
]


def parse(markdown: str) -> list[Token]:
    parser = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    flat: list[Token] = []
    for token in parser.parse(markdown):
        flat.append(token)
        flat.extend(token.children or [])
    return flat


def kinds(tokens: list[Token]) -> set[str]:
    return {token.type for token in tokens}


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_text_stays_text(text: str) -> None:
    tokens = parse(f"- Note: {plain(text)}")
    assert kinds(tokens) <= {
        "bullet_list_open",
        "bullet_list_close",
        "list_item_open",
        "list_item_close",
        "paragraph_open",
        "paragraph_close",
        "inline",
        "text",
    }
    shown = "".join(token.content for token in tokens if token.type == "text")
    assert shown == "Note: " + " ".join(text.split())


@pytest.mark.parametrize("text", HOSTILE)
def test_a_code_span_in_a_table_cell_keeps_the_row_and_the_text(text: str) -> None:
    table = f"| case | value |\n|---|---|\n| {code(text, cell=True)} | 1 |\n"
    tokens = parse(table)
    cells = [token for token in tokens if token.type == "td_open"]
    assert len(cells) == 2
    spans = [token for token in tokens if token.type == "code_inline"]
    assert len(spans) == 1
    assert spans[0].content.strip() == " ".join(text.split())
    assert not kinds(tokens) & {"html_inline", "html_block", "link_open", "image"}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_rendered_comment_keeps_a_hostile_command_inert(
    client: TestClient, session: Session, admin_token: str
) -> None:
    command = "/perf `x` | <img src=x onerror=alert(1)>\n### injected [link](javascript:alert(1))"
    body: dict[str, Any] = {
        "base": {"sha": "669a9bd"},
        "head": {"sha": "669a9bd", "patches": ["#43601"]},
        "cases": ["qwen-image-t2i-1024"],
        "command": command,
    }
    answer = client.post("/api/v1/comparisons", json=body, headers=_auth(admin_token))
    assert answer.status_code == 201, answer.text
    comment = render_comment(
        comparison_view(session=session, comparison_id=answer.json()["id"]), public_url=None
    )
    tokens = parse(comment)
    headings = [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]
    assert not any("injected" in heading for heading in headings)
    assert not kinds(tokens) & {"html_inline", "link_open", "image"}
    [html] = [token for token in tokens if token.type == "html_block"]
    assert html.content.startswith("<!-- perftrack:comparison:")  # the marker, and nothing else
    [span] = [token.content for token in tokens if token.type == "code_inline" and "/perf" in token.content]
    assert span == " ".join(command.split())
    rows = [token for token in tokens if token.type == "tr_open"]
    cells = [token for token in tokens if token.type in ("td_open", "th_open")]
    assert len(cells) == 7 * len(rows)


def test_pr_urls_other_than_http_are_refused(client: TestClient, admin_token: str) -> None:
    body = {
        "base": {"sha": "669a9bd"},
        "head": {"sha": "669a9bd"},
        "cases": ["qwen-image-t2i-1024"],
        "pr_url": "javascript:alert(1)",
    }
    answer = client.post("/api/v1/comparisons", json=body, headers=_auth(admin_token))
    assert answer.status_code == 422
    assert "pr_url" in answer.json()["detail"]
