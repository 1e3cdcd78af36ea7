"""The long fuzz campaigns, run as a script: every OpenAPI operation, the signed GitHub webhook, the
HTML pages, the runner's stateful sequences and schemathesis's linked (stateful) sequences, on a
scratch SQLite database or a PostgreSQL one::

    python -m tests.web.schemathesis_run --examples 200 --seed 7 [--campaigns openapi,stateful]
        [--database-url postgresql://...] [--details]

The bounded versions run in the normal suite (tests/web/test_schemathesis.py). It prints each
campaign's figures (operations, examples, seconds, statuses, distinct failures).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI

from tests.web.campaign import Figures, Tokens
from tests.web.fuzz_lifecycle import run_lifecycle_campaign
from tests.web.fuzz_openapi import run_campaign
from tests.web.fuzz_pages import page_values, run_pages_campaign
from tests.web.fuzz_stateful import run_stateful_campaign
from tests.web.fuzz_webhook import run_webhook_campaign

WEBHOOK_SECRET = "campaign-webhook-secret"  # set, so the webhook answers, not 503
RUNNERS = 3  # runner names for the sequences, each with its own token
Campaign = Callable[[FastAPI, Tokens, argparse.Namespace], Figures]
CAMPAIGNS: dict[str, Campaign] = {
    "openapi": lambda app, tokens, args: run_campaign(
        app, tokens, max_examples=args.examples, seed_value=args.seed, only=args.only
    ),
    "webhook": lambda app, tokens, args: run_webhook_campaign(
        app, secret=WEBHOOK_SECRET, max_examples=args.examples * 5, seed_value=args.seed
    ),
    "pages": lambda app, tokens, args: run_pages_campaign(
        app, tokens.admin, page_values(app, tokens.admin), max_examples=args.examples, seed_value=args.seed
    ),
    "lifecycle": lambda app, tokens, args: run_lifecycle_campaign(
        app, tokens, max_examples=args.examples, seed_value=args.seed
    ),
    "stateful": lambda app, tokens, args: run_stateful_campaign(
        app, tokens, max_examples=args.examples, seed_value=args.seed
    ),
}


def _standalone_app(root: Path, database_url: str | None) -> tuple[FastAPI, Tokens]:
    from tracker import db
    from tracker.access.tokens import create_token
    from tracker.bootstrap import prepare_database
    from tracker.enums import TokenRole
    from tracker.settings import Settings
    from web.app import create_app

    suites = Path(__file__).resolve().parents[2] / "tests" / "data" / "suites"
    settings = Settings(
        database_url=database_url or f"sqlite:///{root / 'campaign.db'}",
        data_dir=root,
        suite_dir=suites,
        environment="test",
        github_webhook_secret=WEBHOOK_SECRET,
        public_url="https://perftrack.example.org",
    )
    engine = db.make_engine(settings.effective_database_url)
    if not settings.is_sqlite:
        db.upgrade(settings.effective_database_url)  # PostgreSQL is never migrated implicitly
    prepare_database(settings, engine)
    run = secrets.token_hex(4)  # a database may be reused between campaigns
    with db.session_scope(db.make_session_factory(engine)) as session:
        admin = create_token(session=session, name=f"campaign-admin-{run}", role=TokenRole.ADMIN).secret
        runner = create_token(session=session, name=f"campaign-runner-{run}", role=TokenRole.RUNNER).secret
        runners = {
            name: create_token(session=session, name=name, role=TokenRole.RUNNER).secret
            for name in (f"fuzz-runner-{run}-{index}" for index in range(RUNNERS))
        }
    tokens = Tokens(admin=admin, runner=runner, runners=runners)
    return create_app(settings, engine, prepare=False), tokens


def main(argv: list[str] | None = None) -> int:
    """Run the chosen campaigns (a scratch SQLite database, or ``--database-url``); print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples",
        type=int,
        default=200,
        help="examples per operation and mode, per page route, sequences; the webhook gets five times as many",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--campaigns", default=",".join(CAMPAIGNS), help=f"a comma list of {', '.join(CAMPAIGNS)}"
    )
    parser.add_argument("--details", action="store_true", help="print each failure's full report")
    parser.add_argument("--only", default="", help="OpenAPI operations whose 'METHOD /path' contains this")
    parser.add_argument(
        "--database-url", help="a PostgreSQL database to run against (migrated; it keeps what the run stores)"
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.campaigns.split(",") if name.strip()]
    unknown = set(chosen) - set(CAMPAIGNS)
    if unknown:
        parser.error(f"unknown campaigns: {', '.join(sorted(unknown))}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="perftrack-schemathesis-") as root:
        app, tokens = _standalone_app(Path(root), args.database_url)
        for name in chosen:
            figures = CAMPAIGNS[name](app, tokens, args)
            print(figures.summary(), flush=True)
            failed = failed or bool(figures.failures)
            if args.details:
                for key in sorted(figures.failures):
                    print(f"\n=== {key}\n{figures.failures[key]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
