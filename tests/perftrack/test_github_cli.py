"""``perftrack github``: the outbox listed, a dead row revived, a flush without credentials; the
deliveries listed and a failed one run again."""

from __future__ import annotations

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from tests.perftrack.test_cli import cli_env, invoke
from tracker.enums import DeliveryState
from tracker.github import outbox
from tracker.models import GithubDelivery, GithubOutbox, utcnow

__all__ = ["cli_env"]


def _rows(url: str) -> None:
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with Session(engine) as session:
        waiting = outbox.queue(
            session=session, kind="reply", repository="o/r", target=7, payload={"body": "hi"}
        )
        dead = outbox.queue(
            session=session, kind="reaction", repository="o/r", target=9, payload={"content": "+1"}
        )
        dead.dead_at = utcnow()
        dead.refusals = 3
        dead.last_error = "POST /repos/o/r/issues/comments/9/reactions: 422 Validation Failed"
        waiting.last_error = "POST /repos/o/r/issues/7/comments: 502 Bad Gateway"
        session.commit()
    engine.dispose()


def test_outbox_list_retry_and_flush(cli_env: str) -> None:
    assert invoke("github", "outbox")[1].strip() == "the outbox is empty"
    _rows(cli_env)
    code, output = invoke("github", "outbox")
    assert code == 0
    assert "waiting" in output
    assert "dead" in output
    code, output = invoke("github", "outbox", "--dead")
    assert "422 Validation Failed" in output
    assert "502" not in output

    code, output = invoke("github", "retry", "2")
    assert code == 0, output
    assert "will be retried" in output
    engine = create_engine(cli_env.replace("postgresql://", "postgresql+psycopg://", 1))
    with Session(engine) as session:
        row = session.scalar(select(GithubOutbox).where(GithubOutbox.id == 2))
        assert row is not None
        assert row.dead_at is None
        assert row.refusals == 0
    engine.dispose()
    assert invoke("github", "outbox", "--dead")[1].strip() == "the outbox is empty"

    code, output = invoke("github", "retry", "99")
    assert code == 1
    assert "no outbox row 99" in output

    code, output = invoke("github", "flush")  # no credentials: nothing sent, nothing lost
    assert code == 0
    assert "sent 0" in output


def test_deliveries_listed_and_a_failed_one_run_again(cli_env: str) -> None:
    assert invoke("github", "deliveries")[1].strip() == "no deliveries"
    engine = create_engine(cli_env.replace("postgresql://", "postgresql+psycopg://", 1))
    with Session(engine) as session:
        session.add_all(
            [
                GithubDelivery(delivery_id="d-done", event="issue_comment", action="created", outcome="help"),
                GithubDelivery(
                    delivery_id="d-failed",
                    event="issue_comment",
                    action="created",
                    state=DeliveryState.FAILED,
                    outcome="failed: the GitHub App is not installed on o/r",
                    payload={"kind": "comment", "repository": "o/r"},
                ),
            ]
        )
        session.commit()
    code, output = invoke("github", "deliveries", "--failed")
    assert code == 0, output
    assert "d-failed" in output
    assert "d-done" not in output
    assert invoke("github", "redo", "d-done")[0] == 1  # only a failed delivery runs again
    code, output = invoke("github", "redo", "d-failed")
    assert code == 0, output
    with Session(engine) as session:
        row = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == "d-failed"))
        assert row is not None
        assert row.state is DeliveryState.PENDING
    engine.dispose()
    assert invoke("github", "redo", "nope")[0] == 1
