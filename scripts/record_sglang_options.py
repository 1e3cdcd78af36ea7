"""Record the option tables of a published sglang's `generate` and `serve` commands.

    .venv/bin/python scripts/record_sglang_options.py 0.5.23 [--out PATH]

Asks the contract probe (tests/contract/sglang/probe.py, running the real sglang that
scripts/sglang_contract_env.sh installed in .sglang/VERSION) for both parsers' options and writes them to
tests/data/sglang/options/VERSION.json, one option per line, sorted by first flag. The contract tests
compare that file with the live probe, so a new sglang release shows what it added, removed or changed.
Starting the probe takes 20-40 s (sglang's import).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository's tests/

from tests.contract.sglang.env import (
    REPO_ROOT,
    SglangContractEnv,
    dump_options_document,
    options_document,
    options_path,
)


def main(argv: list[str] | None = None) -> int:
    """Record one version's option tables; 1 when its environment is not installed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="an sglang version installed by scripts/sglang_contract_env.sh")
    parser.add_argument(
        "--out", type=Path, help="where to write (default tests/data/sglang/options/VERSION.json)"
    )
    args = parser.parse_args(argv)
    env = SglangContractEnv(args.version)
    reason = env.missing_reason()
    if reason is not None:
        print(f"{reason}: run {env.install_command}", file=sys.stderr)
        return 1
    session = env.start()
    try:
        document = options_document(session)
    finally:
        session.close()
    out: Path = args.out or options_path(args.version)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_options_document(document), encoding="utf-8")
    counts = ", ".join(f"{command} {len(rows)}" for command, rows in document["commands"].items())
    shown = out.resolve().relative_to(REPO_ROOT) if out.resolve().is_relative_to(REPO_ROOT) else out
    print(f"sglang {args.version}: {counts} options -> {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
