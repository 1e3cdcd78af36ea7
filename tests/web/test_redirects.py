"""A trailing-slash redirect builds no URL from the Host header (docs/operations.md): its Location is
relative, so ``Host: evil.example`` cannot send the client (or a cache) elsewhere."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from web.redirects import relative_location


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/api/v1/alerts/?status=open&limit=5", "/api/v1/alerts?status=open&limit=5"),
        ("/runners/", "/runners"),
    ],
)
def test_a_trailing_slash_redirect_is_relative(client: TestClient, path: str, target: str) -> None:
    for host in ("evil.example", "evil.example:8443", "EVIL.example"):
        answer = client.get(path, headers={"Host": host}, follow_redirects=False)
        assert answer.status_code == 307, answer.text
        assert answer.headers["location"] == target
    assert client.get(path).status_code == 200  # and it still leads where it did


def test_only_a_location_naming_the_requested_host_is_rewritten() -> None:
    assert relative_location("http://evil.example/runs?a=1#x", "evil.example") == "/runs?a=1#x"
    assert relative_location("https://EVIL.example", "evil.example") == "/"
    assert relative_location("http://evil.example//other.example/x", "evil.example") == "/%2Fother.example/x"
    assert relative_location("https://github.com/o/r", "evil.example") == "https://github.com/o/r"
    assert relative_location("/alerts/3", "evil.example") == "/alerts/3"
