"""The HTML pages under fuzzing: every page route of the app (tests/web/app_routes.py), so a new page
is covered the day it is added.

Path parameters get real names and ids, huge and negative numbers, odd unicode, raw ``%0A`` and
other escapes, and very long strings; query and form parameters are the ones the route declares,
with values of their type or not. GETs come anonymous or signed in; POSTs come without a session,
with a session's genuine CSRF field but nobody signed in, signed in with the genuine field, and
signed in with a wrong one. No answer may be a 5xx, and every answer is HTML or a redirect.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from tests.web.app_routes import AppRoute, Parameter, page_routes
from tests.web.campaign import Figures, bounded, first_line
from tests.web.fuzz_openapi import known_values

CSRF_FIELD = "csrf_token"
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
_BIG_NUMBERS = ("0", "-1", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e400")
_RAW_SEGMENTS = ("%0A", "%0D%0A", "%25", "%ZZ", "%E2%80%AE", "%F0%9F%92%A9", "%C0%AE", "..%2F..", "%20")
GET_AS = ("anonymous", "admin")
POST_AS = ("no-session", "csrf-only", "admin", "admin-wrong-csrf")


@dataclass(frozen=True)
class PageRequest:
    """One generated request to a page."""

    url: str
    query: dict[str, str]
    form: dict[str, str]
    who: str

    def report(self, method: str) -> str:
        """The request, for a finding's report."""
        return f"{method} {self.url}\nquery: {self.query!r}\nform: {self.form!r}\nas: {self.who}"


def _is_int(annotation: Any) -> bool:
    return annotation is int or int in get_args(annotation)


_odd_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30)
_long_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1000, max_size=3000)


def _values(parameter: Parameter, known: Mapping[str, list[str]]) -> st.SearchStrategy[str]:
    """Text for one parameter: of its type half the time (real names where there are some)."""
    real = known.get(parameter.name, [])
    typed = (
        st.integers(min_value=1, max_value=5).map(str) | st.sampled_from(_BIG_NUMBERS)
        if _is_int(parameter.annotation)
        else _odd_text
    )
    if real:
        typed = st.sampled_from(real) | typed
    return st.one_of(typed, typed, _odd_text, _long_text, st.sampled_from(("", " ", "\n", "../..", "%0A")))


def _segment(value: str, raw: str | None) -> str:
    return raw if raw is not None else quote(value, safe="")


@st.composite
def page_requests(draw: st.DrawFn, route: AppRoute, known: Mapping[str, list[str]]) -> PageRequest:
    """A request to ``route`` with generated path, query and form parameters."""
    url = route.path
    query: dict[str, str] = {}
    form: dict[str, str] = {}
    for parameter in route.parameters:
        value = draw(_values(parameter, known))
        if parameter.location == "path":
            raw = draw(st.none() | st.none() | st.sampled_from(_RAW_SEGMENTS))
            url = url.replace("{" + parameter.name + "}", _segment(value, raw))
        elif draw(st.booleans() | st.just(True)):  # mostly sent; left out now and then
            (query if parameter.location == "query" else form)[parameter.name] = value
    if draw(st.integers(0, 9)) == 0:
        query[draw(_odd_text)] = draw(_odd_text)  # a parameter the route does not declare
    who = draw(st.sampled_from(POST_AS if route.method == "POST" else GET_AS))
    return PageRequest(url=url, query=query, form=form, who=who)


class Browsers:
    """An anonymous browser and one signed in with the admin token, each with its CSRF field."""

    def __init__(self, app: FastAPI, admin_token: str) -> None:
        self.app = app
        self.admin_token = admin_token
        self.anonymous = self._client()
        self.admin = self._client()
        self.anonymous_csrf = ""
        self.admin_csrf = ""
        self.reset()

    def _client(self) -> TestClient:
        return TestClient(self.app, follow_redirects=False)

    def reset(self) -> None:
        """Start both sessions afresh (a generated POST may have signed one in or out)."""
        self.anonymous.cookies.clear()
        self.admin.cookies.clear()
        self.anonymous_csrf = _csrf(self.anonymous.get("/login").text)
        login_csrf = _csrf(self.admin.get("/login").text)
        signed_in = self.admin.post(
            "/login", data={"token": self.admin_token, CSRF_FIELD: login_csrf, "next": "/"}
        )
        assert signed_in.status_code == 303, signed_in.text
        self.admin_csrf = _csrf(self.admin.get("/").text)

    def close(self) -> None:
        """Close both clients."""
        self.anonymous.close()
        self.admin.close()

    def send(self, method: str, request: PageRequest) -> Any:
        """Send ``request`` as its ``who`` says."""
        client = self.admin if request.who.startswith("admin") else self.anonymous
        if method == "GET":
            return client.get(request.url, params=request.query)
        form = dict(request.form)
        if request.who == "admin":
            form[CSRF_FIELD] = self.admin_csrf
        elif request.who == "admin-wrong-csrf":
            form[CSRF_FIELD] = self.admin_csrf[::-1]
        elif request.who == "csrf-only":
            form[CSRF_FIELD] = self.anonymous_csrf
        else:
            client = TestClient(self.app, follow_redirects=False)  # no cookie at all
        return client.request(method, request.url, params=request.query, data=form)


def page_values(app: FastAPI, admin_token: str) -> dict[str, list[str]]:
    """Real values for page parameters, by name: the API's names, filters' values, sign-in fields."""
    known = {
        name: [value for value in values if isinstance(value, str)]
        for name, values in known_values(app).items()
    }
    return known | {
        "status": ["open", "acknowledged", "fixed", "wontfix", "all"],
        "state": ["queued", "leased", "done", "failed"],
        "direction": ["regression", "improvement"],
        "token": [admin_token, "pt_" + "x" * 43],
        "next": ["/alerts", "//evil.example/", "https://evil.example/", "/\\evil.example"],
    }


def _csrf(html: str) -> str:
    match = CSRF_INPUT.search(html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def _acceptable(response: Any) -> str | None:
    """Why the answer is a finding, or ``None``."""
    if response.status_code >= 500:
        return f"{response.status_code}"
    if 300 <= response.status_code < 400:
        return None if response.headers.get("location") else f"{response.status_code} without a Location"
    content_type = response.headers.get("content-type", "")
    if not content_type.startswith("text/html"):
        return f"{response.status_code} answered {content_type or 'no content type'}, not HTML"
    return None


def run_pages_campaign(
    app: FastAPI,
    admin_token: str,
    known: Mapping[str, list[str]],
    *,
    max_examples: int,
    seed_value: int = 0,
) -> Figures:
    """``max_examples`` generated requests per page route; collect 5xx and non-HTML answers."""
    figures = Figures(title="HTML pages")
    routes = page_routes(app)
    with TestClient(app):  # the app's lifespan, once
        browsers = Browsers(app, admin_token)
        try:
            for route in routes:
                figures.operations += 1
                _exercise(route, browsers, known, figures, max_examples=max_examples, seed_value=seed_value)
        finally:
            browsers.close()
    return figures.stop()


def _exercise(
    route: AppRoute,
    browsers: Browsers,
    known: Mapping[str, list[str]],
    figures: Figures,
    *,
    max_examples: int,
    seed_value: int,
) -> None:
    label = f"{route.method} {route.path}"

    @bounded(max_examples, seed_value)
    @given(request=page_requests(route, known))
    def exercise(request: PageRequest) -> None:
        figures.examples += 1
        try:
            response = browsers.send(route.method, request)
        except Exception as error:  # an exception out of the app is a 500
            figures.statuses[500] += 1
            tail = "".join(traceback.format_exception(error)[-8:])
            figures.found(
                f"{label} [{request.who}] {first_line(error)}", f"{request.report(route.method)}\n\n{tail}"
            )
            return
        finally:
            if route.method != "GET":
                browsers.reset()
        figures.statuses[response.status_code] += 1
        problem = _acceptable(response)
        if problem is not None:
            figures.found(
                f"{label} [{request.who}] {problem}",
                f"{request.report(route.method)}\n\n{response.text[:2000]}",
            )

    exercise()
