"""The stateful campaign's harness finds what it is there to find: a 5xx reached only through a link."""

from __future__ import annotations

import schemathesis
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from tests.web.campaign import Tokens
from tests.web.fuzz_stateful import run_stateful_campaign


class Item(BaseModel):
    id: int


def items_app() -> FastAPI:
    """An API whose only fault is reading an item that exists: random ids never reach it, a link does."""
    app = FastAPI()
    created: set[int] = set()

    @app.post("/items", status_code=201, response_model=Item)
    def create_item() -> Item:
        item = Item(id=10_000_019 + len(created))
        created.add(item.id)
        return item

    @app.get("/items/{item_id}", response_model=Item, responses={404: {"description": "no such item"}})
    def read_item(item_id: int) -> Item:
        if item_id in created:
            raise RuntimeError(f"item {item_id} cannot be read")
        raise HTTPException(status_code=404)

    return app


def test_a_server_error_behind_a_link_is_reported_not_raised() -> None:
    app = items_app()
    figures = run_stateful_campaign(
        app,
        Tokens(admin="", runner=""),
        max_examples=30,
        seed_value=1,
        schema=schemathesis.openapi.from_asgi("/openapi.json", app),
    )
    assert figures.server_errors() == [500], figures.summary()
    report = figures.failures["GET /items/{item_id} ST101 Server error"]
    assert "RuntimeError: item 10000019 cannot be read" in report  # the app's own traceback
    assert figures.operations == 2
    # Each 500 was an answer: the sequences went on past it instead of stopping there.
    assert figures.statuses[500] > 1
