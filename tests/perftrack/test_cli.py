"""The perftrack CLI: parse-log, import-log (to the database and over HTTP), db, token, suites."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image
from sqlalchemy import text
from typer.testing import CliRunner

from perftrack.cli import app
from perftrack.cli.common import console
from tests.conftest import ROOT, SUITES
from tests.live import live_server
from tests.tracker.views.alert_rows import unconfirmed_suspect
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.settings import Settings, get_settings
from tracker.views.series import series

EXAMPLES = ROOT / "tests" / "data" / "sglang"
REGRESSION = [
    ("qwen_image_669a9bd.log", "669a9bd", "2026-05-18T09:00:00Z", "Baseline"),
    ("qwen_image_4739f2e.log", "4739f2e", "2026-05-19T09:00:00Z", "Fuse RMSNorm under torch._dynamo.disable"),
    ("qwen_image_fix.log", "9c1d5e2", "2026-05-21T09:00:00Z", "Fused norm as torch.library.custom_op"),
]

runner = CliRunner()


@pytest.fixture
def cli_env(migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Point the CLI's settings at a database of its own."""
    monkeypatch.setenv("PERFTRACK_DATABASE_URL", migrated_db_url)
    monkeypatch.setenv("PERFTRACK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PERFTRACK_SUITE_DIR", str(SUITES))
    monkeypatch.delenv("PERFTRACK_SERVER_URL", raising=False)
    monkeypatch.delenv("PERFTRACK_TOKEN", raising=False)
    monkeypatch.delenv("PERFTRACK_ADMIN_TOKEN", raising=False)
    get_settings.cache_clear()
    yield migrated_db_url
    get_settings.cache_clear()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def import_regression(extra: list[str] | None = None) -> list[str]:
    outputs = []
    for log, sha, when, title in REGRESSION:
        code, output = invoke(
            "import-log",
            str(EXAMPLES / log),
            "--case",
            "qwen-image-t2i-1024",
            "--hardware",
            "H200",
            "--commit",
            sha,
            "--commit-time",
            when,
            "--title",
            title,
            *(extra or []),
        )
        assert code == 0, output
        outputs.append(output)
    return outputs


def import_fix(server: str, token: str) -> tuple[int, str]:
    """Post the fix log for another commit through ``--server``."""
    log = str(EXAMPLES / "qwen_image_fix.log")
    return invoke(
        "import-log",
        log,
        "--case",
        "qwen-image-t2i-1024",
        "--hardware",
        "H200",
        "--commit",
        "1234567",
        "--server",
        server,
        "--token",
        token,
    )


def test_parse_log_prints_what_would_be_stored() -> None:
    code, output = invoke("parse-log", str(EXAMPLES / "qwen_image_4739f2e.log"))
    assert code == 0, output
    parsed = json.loads(output)
    assert parsed["status"] == "ok"
    assert parsed["denoise_step_count"] == 50
    assert parsed["denoise_step_mean_ms"] == pytest.approx(287.6)
    assert parsed["denoise_step_ms"] == pytest.approx(287.6)
    assert parsed["denoise_stage_ms"] == pytest.approx(14384.3)
    assert parsed["warmup_requests"] == 1
    assert [stage["name"] for stage in parsed["stages"]][-2:] == ["DenoisingStage", "DecodingStage"]


def test_parse_log_with_truncated_dump_is_a_clear_error(tmp_path: Path) -> None:
    code, output = invoke(
        "parse-log",
        str(EXAMPLES / "qwen_image_669a9bd.log"),
        "--perf-dump",
        str(ROOT / "tests" / "data" / "sglang" / "perf_dump_truncated.json"),
    )
    assert code == 1
    assert "perf_dump_truncated.json" in output
    assert "truncated" in output


def test_import_regression_into_the_database(cli_env: str) -> None:
    outputs = import_regression()
    assert "run 1 stored" in outputs[0]
    assert "263.7 ms/step" in outputs[0]
    assert "287.6 ms/step" in outputs[1]
    assert "258.2 ms/step" in outputs[2]
    # The same logs again: nothing new is stored.
    again = import_regression()
    assert all("already stored" in output for output in again)
    get_settings.cache_clear()
    settings = Settings(database_url=cli_env)
    from tracker.views.series import series

    engine = db.make_engine(settings.effective_database_url)
    with db.make_session_factory(engine)() as session:
        data = series(session=session, case_slug="qwen-image-t2i-1024", hardware="H200")
    engine.dispose()
    assert [point.commit_sha for point in data.points] == ["669a9bd", "4739f2e", "9c1d5e2"]
    assert [round(point.value or 0, 1) for point in data.points] == [263.7, 287.6, 258.2]
    assert [None if p.change_pct is None else round(p.change_pct, 1) for p in data.points] == [
        None,
        9.1,
        -10.2,
    ]


QWEN_AT_669A9BD = ["--case", "qwen-image-t2i-1024", "--hardware", "H200", "--commit", "669a9bd"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--case", "qwen-image", "--hardware", "H200", "--commit", "669a9bd"], "unknown case 'qwen-image'"),
        (
            ["--case", "qwen-image-t2i-1024", "--hardware", "A100", "--commit", "669a9bd"],
            "unknown hardware kind",
        ),
        (["--case", "qwen-image-t2i-1024", "--hardware", "H200", "--commit", "zzzzzzz"], "commit.sha"),
        (
            [
                "--case",
                "qwen-image-t2i-1024",
                "--hardware",
                "H200",
                "--commit",
                "669a9bd",
                "--commit-time",
                "yesterday",
            ],
            "--commit-time",
        ),
        (
            ["--case", "qwen-image-t2i-1024", "--hardware", "H200", "--commit", "669a9bd", "--patch", "main"],
            "patches[0]",
        ),
        (
            [*QWEN_AT_669A9BD, "--patch", "#99999999999999999999"],
            "patches[0]: pull request number 99999999999999999999 is not between 1 and 2147483647",
        ),
        (
            [*QWEN_AT_669A9BD, "--patch", "#43601", "--patch", "refs/pull/43601/head"],
            "patches: [1] 'refs/pull/43601/head' repeats [0]",
        ),
        (
            [*QWEN_AT_669A9BD, "--commit-time", "0001-01-01T00:00:00+05:00"],
            "commit.committed_at: must be between 1970-01-01 and 2100-12-31",
        ),
    ],
)
def test_import_errors_are_clear_and_store_nothing(cli_env: str, args: list[str], message: str) -> None:
    code, output = invoke("import-log", str(EXAMPLES / "qwen_image_669a9bd.log"), *args)
    assert code == 1
    assert message in output
    engine = db.make_engine(Settings(database_url=cli_env).effective_database_url)
    with engine.connect() as connection:
        from sqlalchemy import text

        assert connection.execute(text("SELECT count(*) FROM runs")).scalar() == 0
        assert connection.execute(text("SELECT count(*) FROM commits")).scalar() == 0
    engine.dispose()


def test_import_over_http_and_token_lifecycle(cli_env: str, tmp_path: Path) -> None:
    code, output = invoke("token", "create", "ci-runner", "--role", "runner")
    assert code == 0, output
    secret = output.strip().splitlines()[-1]
    assert secret.startswith("pt_")
    code, listing = invoke("token", "list")
    assert "ci-runner" in listing
    assert secret not in listing
    settings = Settings(database_url=cli_env, data_dir=tmp_path, suite_dir=SUITES)
    with live_server(settings) as url:
        outputs = import_regression(["--server", url, "--token", secret])
        assert "stored" in outputs[1]
        assert "287.6 ms/step" in outputs[1]
        points = httpx.get(f"{url}/api/v1/series/qwen-image-t2i-1024/H200").json()["points"]
        assert [round(p["change_pct"], 1) for p in points[1:]] == [9.1, -10.2]
        code, output = import_fix(url, "pt_wrong")
        assert code == 1
        assert "401" in output
        assert "unknown bearer token" in output
        assert invoke("token", "revoke", "ci-runner")[0] == 0
        code, output = import_fix(url, secret)
        assert code == 1
        assert "revoked" in output
    code, output = import_fix("http://127.0.0.1:9", secret)
    assert code == 1
    assert "cannot reach" in output


def test_db_commands(cli_env: str) -> None:
    code, output = invoke("db", "upgrade")
    assert code == 0
    assert db.head_revision() in output
    code, output = invoke("db", "current")
    assert code == 0
    assert output.count(db.head_revision() or "-") == 2
    code, output = invoke("db", "downgrade", "base")
    assert code == 0
    assert "base" in output
    code, output = invoke("db", "current")
    assert code == 2
    assert "perftrack db upgrade" in output


def test_suites_check_reports_line_and_field(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    suite_text = (SUITES / "sglang-diffusion.toml").read_text()
    line = suite_text.splitlines().index("width = 848") + 1
    broken.write_text(suite_text.replace("width = 848", "width = 0"))
    code, output = invoke("suites", "check", str(SUITES / "sglang-diffusion.toml"), str(broken))
    assert code == 1
    assert "7 cases" in output
    assert f"{broken}:{line} [cases[3].params.width]" in output.replace("\n", "")


def log_directory(root: Path) -> Path:
    """Logs as a lab keeps them: metadata beside each, one perf dump, and a few that go wrong."""
    folder = root / "logs"
    folder.mkdir()

    def add(name: str, source: str, meta: dict[str, object] | None = None, dump: str | None = None) -> None:
        (folder / name).write_bytes((EXAMPLES / source).read_bytes())
        stem = name.rsplit(".", 1)[0]
        if meta is not None:
            (folder / f"{stem}.meta.json").write_text(json.dumps(meta))
        if dump is not None:
            (folder / f"{stem}.perf.json").write_bytes((EXAMPLES / dump).read_bytes())

    for (log, sha, when, title), name in zip(
        REGRESSION, ["a-baseline.log", "b-fused.log", "c-fix.txt"], strict=True
    ):
        dump = "perf_dump_qwen_image_669a9bd.json" if sha == "669a9bd" else None
        add(name, log, {"commit": sha, "commit_time": when, "title": title}, dump)
    add("d-truncated-dump.log", "qwen_image_669a9bd.log", {"commit": "1111111"}, "perf_dump_truncated.json")
    add("e-no-commit.log", "qwen_image_fix.log")
    add("f-bad-meta.log", "qwen_image_fix.log", {"commit": "2222222", "colour": "red"})
    add("g-unknown-case.log", "qwen_image_fix.log", {"commit": "3333333", "case": "no-such-case"})
    (folder / "README.md").write_text("not a log\n")
    return folder


def check_directory_output(output: str, *, again: bool) -> None:
    lines = dict(
        line.split(": ", 1) for line in output.splitlines() if ": " in line and not line.startswith(" ")
    )
    stored = "already stored" if again else "stored"
    for name in ("a-baseline.log", "b-fused.log", "c-fix.txt"):
        assert lines[name].endswith(f" {stored}"), output
        assert lines[name].startswith("run "), output
    assert lines["d-truncated-dump.log"].startswith("could not parse: "), output
    assert "d-truncated-dump.perf.json" in lines["d-truncated-dump.log"]
    assert (
        lines["e-no-commit.log"]
        == 'refused: commit: not given (--commit, or "commit" in e-no-commit.meta.json)'
    )
    assert lines["f-bad-meta.log"].startswith("could not parse: f-bad-meta.meta.json: colour: "), output
    assert lines["g-unknown-case.log"].startswith("refused: case: unknown case 'no-such-case'"), output
    assert "README.md" not in output
    counts = "0 stored, 3 already stored" if again else "3 stored, 0 already stored"
    assert f"7 logs: {counts}, 2 refused, 2 could not be parsed" in output


def count_rows(url: str, table: str) -> int:
    engine = db.make_engine(Settings(database_url=url).effective_database_url)
    with engine.connect() as connection:
        count = int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    engine.dispose()
    return count


def series_values(url: str) -> list[tuple[str, float]]:
    engine = db.make_engine(Settings(database_url=url).effective_database_url)
    with db.make_session_factory(engine)() as session:
        data = series(session=session, case_slug="qwen-image-t2i-1024", hardware="H200")
    engine.dispose()
    return [(point.commit_sha, round(point.value or 0, 1)) for point in data.points]


def test_import_a_directory_into_the_database(cli_env: str, tmp_path: Path) -> None:
    folder = log_directory(tmp_path)
    args = ["import-log", str(folder), "--case", "qwen-image-t2i-1024", "--hardware", "H200"]
    code, output = invoke(*args)
    assert code == 1, output  # some logs were not stored
    check_directory_output(output, again=False)
    # The dump beside the baseline gave its per-step times: the median step is its value of record.
    assert series_values(cli_env) == [("669a9bd", 263.8), ("4739f2e", 287.6), ("9c1d5e2", 258.2)]
    # In-process, the marked series was evaluated at the end: the regression (and its fix) is an alert.
    assert count_rows(cli_env, "alerts") == 1
    assert count_rows(cli_env, "pending_evaluations") == 0
    code, output = invoke(*args)
    assert code == 1
    check_directory_output(output, again=True)
    for name in ("d-truncated-dump.log", "e-no-commit.log", "f-bad-meta.log", "g-unknown-case.log"):
        (folder / name).unlink()
    code, output = invoke(*args)
    assert code == 0, output
    assert "3 logs: 0 stored, 3 already stored, 0 refused, 0 could not be parsed" in output
    # A log imported alone after its directory is the same run.
    code, output = invoke(
        "import-log",
        str(folder / "b-fused.log"),
        "--case",
        "qwen-image-t2i-1024",
        "--hardware",
        "H200",
        "--commit",
        "4739f2e",
        "--commit-time",
        "2026-05-19T09:00:00Z",
        "--title",
        REGRESSION[1][3],
    )
    assert code == 0, output
    assert "already stored" in output


def test_import_a_directory_over_http(cli_env: str, tmp_path: Path) -> None:
    code, output = invoke("token", "create", "lab-laptop", "--role", "runner")
    assert code == 0, output
    secret = output.strip().splitlines()[-1]
    folder = log_directory(tmp_path)
    settings = Settings(database_url=cli_env, data_dir=tmp_path, suite_dir=SUITES)
    with live_server(settings) as url:
        args = [
            "import-log",
            str(folder),
            "--case",
            "qwen-image-t2i-1024",
            "--hardware",
            "H200",
            "--server",
            url,
        ]
        code, output = invoke(*args, "--token", secret)
        assert code == 1, output
        check_directory_output(output, again=False)
        code, output = invoke(*args, "--token", secret)
        check_directory_output(output, again=True)
        code, output = invoke(*args, "--token", "pt_wrong")
        assert code == 1
        assert "401" in output
    assert series_values(cli_env) == [("669a9bd", 263.8), ("4739f2e", 287.6), ("9c1d5e2", 258.2)]


def picture(path: Path, shade: int) -> Path:
    """A small seeded-output stand-in: an RGB gradient, PNG."""
    pixels = (np.add.outer(np.arange(48), np.arange(64)) % 256).astype(np.uint8)
    Image.fromarray(np.stack([pixels, pixels, np.full_like(pixels, shade)], axis=-1)).save(path)
    return path


def test_import_log_keeps_the_seeded_output_it_is_given(cli_env: str, tmp_path: Path) -> None:
    single = ["--case", "qwen-image-t2i-1024", "--hardware", "H200", "--commit", "669a9bd"]
    log = str(EXAMPLES / "qwen_image_669a9bd.log")
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a picture")
    code, output = invoke("import-log", log, *single, "--output", str(broken))
    assert code == 1
    assert "--output" in output
    assert "broken.png" in output
    code, output = invoke("import-log", log, *single, "--output", str(picture(tmp_path / "out.png", 10)))
    assert code == 0, output
    assert "run 1 stored" in output  # the refused import stored nothing
    assert count_rows(cli_env, "run_outputs") == 1
    assert count_rows(cli_env, "run_output_frames") == 1
    # A directory's logs take NAME.output.* beside them.
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "fused.log").write_bytes((EXAMPLES / "qwen_image_4739f2e.log").read_bytes())
    (folder / "fused.meta.json").write_text(json.dumps({"commit": "4739f2e"}))
    picture(folder / "fused.output.png", 200)
    code, output = invoke("import-log", str(folder), "--case", "qwen-image-t2i-1024", "--hardware", "H200")
    assert code == 0, output
    assert count_rows(cli_env, "run_outputs") == 2


def test_alerts_list_reads_as_the_pages_do(cli_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 250)  # one line per alert
    engine = db.make_engine(cli_env)
    with db.session_scope(db.make_session_factory(engine)) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
        unconfirmed_suspect(session, 4)
    engine.dispose()
    code, output = invoke("alerts", "list")
    assert code == 0, output
    words = " ".join(output.split())
    assert "unconfirmed" in words
    assert "-1.37 % [-2.30, -0.45] %" in words  # the paired estimate, not detection's -3.6 %
    assert "-3.6" not in words
