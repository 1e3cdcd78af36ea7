"""Suite files: the shipped suites load; every kind of mistake names file, line and field.

The tests read their own copy (tests/data/suites/); only
:func:`test_shipped_suites_load_and_validate` reads the shipped suites.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import SHIPPED_SUITES, SUITES
from tracker.catalog.cases import sync_suites
from tracker.catalog.suite_schema import MAX_CONFIRMATION_ROUNDS, MIN_CONFIRMATION_ROUNDS
from tracker.catalog.suites import load_suite, load_suites, parse_suite
from tracker.comparisons.creation import MAX_ROUNDS
from tracker.detection.confirmation import POLICY
from tracker.errors import SuiteError
from tracker.models import Case

SUITE_TEXT = (SUITES / "sglang-diffusion.toml").read_text()


def test_shipped_suites_load_and_validate(session: Session) -> None:
    """The one test of the product's own suite files: they parse, validate and sync into the catalog."""
    suites = load_suites(SHIPPED_SUITES)
    assert suites
    assert all(suite.cases for suite in suites)
    sync_suites(session=session, suites=suites)


def test_suite_file_has_the_maintainers_cases() -> None:
    suite = load_suite(SUITES / "sglang-diffusion.toml")
    cases = {case.slug: case for case in suite.cases}
    qwen = cases["qwen-image-t2i-1024"]
    assert qwen.model == "Qwen/Qwen-Image-2512"
    assert qwen.params["width"] == qwen.params["height"] == 1024
    assert qwen.params["num-inference-steps"] == 50
    assert qwen.params["guidance-scale"] == 4.0
    assert qwen.params["seed"] == 42
    assert qwen.flags["enable-torch-compile"] is True
    assert qwen.flags["warmup"] is True
    assert qwen.flags["dit-cpu-offload"] == "false"
    assert qwen.hardware == ["H200"]
    assert qwen.threshold_pct == 2.0
    wan = cases["wan2.2-t2v-a14b"]
    assert (wan.params["num-frames"], wan.params["num-inference-steps"], wan.num_gpus) == (81, 40, 8)
    assert wan.flags["ulysses-degree"] == 4
    assert wan.flags["enable-cfg-parallel"] is True
    assert cases["wan2.1-t2v-1.3b"].model == "Wan-AI/Wan2.1-T2V-1.3B-Diffusers"
    hunyuan = cases["hunyuanvideo-t2v-480p"]
    assert (hunyuan.params["width"], hunyuan.params["height"], hunyuan.params["num-frames"]) == (848, 480, 65)
    served = [case for case in suite.cases if case.mode == "serve"]
    assert {case.model for case in served} == {
        "Qwen/Qwen-Image-2.1",
        "black-forest-labs/FLUX.1-dev",
        "Tongyi-MAI/Z-Image-Turbo",
    }
    assert all(case.hardware == ["GB300"] and case.flags["tp-size"] == 2 for case in served)
    assert all(case.threshold_pct <= 3.0 for case in suite.cases)


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "message"),
    [
        ("width = 848", "width = -5", 149, "cases[3].params.width", "greater than 0"),
        ('slug = "wan2.1-t2v-1.3b"', 'slug = "wan2.2-t2v-a14b"', 106, "cases[2].slug", "duplicate case slug"),
        ("threshold_pct = 3.0", "threshold_pct = 0", None, "cases[6].threshold_pct", "greater than 0"),
        (
            'hardware = ["GB300"]\nnum_gpus = 2\n# Nine',
            'hardware = ["B200"]\nnum_gpus = 2\n# Nine',
            None,
            "cases[6].hardware",
            "unknown hardware kind 'B200'",
        ),
        (
            "enable-cfg-parallel = true",
            "enable-cfg-parallel = [1]",
            98,
            "cases[1].flags.enable-cfg-parallel",
            "valid",
        ),
        (
            'task = "t2v"\npaths = ["python/sglang/multimodal_gen/**/wan*.py"]\nhardware = ["H200"]\nnum_gpus = 8',
            'task = "video"\npaths = ["python/sglang/multimodal_gen/**/wan*.py"]\nhardware = ["H200"]\nnum_gpus = 8',
            80,
            "cases[1].task",
            "'t2i'",
        ),
        ("[suite]", "[suite", 11, None, "not valid TOML"),
    ],
)
def test_malformed_suite_names_file_line_and_field(
    old: str, new: str, line: int | None, field: str | None, message: str
) -> None:
    assert old in SUITE_TEXT
    with pytest.raises(SuiteError) as caught:
        parse_suite(SUITE_TEXT.replace(old, new, 1), "suites/broken.toml")
    error = caught.value
    assert error.path == "suites/broken.toml"
    if line is not None:
        assert error.line == line
    else:
        assert error.line is not None
    assert error.field == field
    assert message in error.message
    assert str(error).startswith(f"suites/broken.toml:{error.line}")


def test_missing_required_field_points_at_its_table() -> None:
    broken = SUITE_TEXT.replace(
        "seed = 42\n\n[cases.flags]\ndit-layerwise", "\n[cases.flags]\ndit-layerwise", 1
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(broken, "x.toml")
    assert caught.value.field == "cases[3].params.seed"
    assert caught.value.message.startswith("required field is missing")
    assert caught.value.line is not None
    assert "[cases.params]" in broken.splitlines()[caught.value.line - 1]


def test_threshold_override_must_name_a_hardware_of_the_case() -> None:
    broken = SUITE_TEXT.replace("thresholds = { GB300 = 2.0 }", "thresholds = { H200 = 2.0 }")
    with pytest.raises(SuiteError, match="not in this case's hardware list"):
        parse_suite(broken, "x.toml")


def test_unreadable_suite_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(SuiteError, match="cannot read suite file"):
        load_suite(path)


def test_changed_parameter_is_a_new_case_version(session: Session, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(
        SUITE_TEXT.replace("num-inference-steps = 50", "num-inference-steps = 40", 1)
    )
    report = sync_suites(session=session, suites=load_suites(tmp_path))
    assert report.new_versions == ["qwen-image-t2i-1024"]
    versions = session.scalars(
        select(Case).where(Case.slug == "qwen-image-t2i-1024").order_by(Case.version)
    ).all()
    assert [(case.version, case.is_current) for case in versions] == [(1, False), (2, True)]
    assert versions[1].params["num-inference-steps"] == 40
    # Going back to the original parameters makes version 1 current again, no third version.
    report = sync_suites(session=session, suites=load_suites(SUITES))
    versions = session.scalars(
        select(Case).where(Case.slug == "qwen-image-t2i-1024").order_by(Case.version)
    ).all()
    assert [(case.version, case.is_current) for case in versions] == [(1, True), (2, False)]


def test_threshold_change_updates_in_place(session: Session, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(SUITE_TEXT.replace("threshold_pct = 3.0", "threshold_pct = 2.5", 1))
    report = sync_suites(session=session, suites=load_suites(tmp_path))
    assert report.updated == ["z-image-turbo-serve-gb300"]
    assert report.new_versions == []
    case = session.scalar(
        select(Case).where(Case.slug == "z-image-turbo-serve-gb300", Case.is_current.is_(True))
    )
    assert case is not None
    assert case.threshold_for("GB300") == 2.5


def test_output_tolerance_comes_from_the_case_or_the_defaults_and_keeps_the_version(
    session: Session, tmp_path: Path
) -> None:
    shipped = parse_suite(SUITE_TEXT)
    assert {case.output_psnr_db for case in shipped.cases} == {None}  # the tracker's 40 dB
    with_default = SUITE_TEXT.replace("[defaults]\n", "[defaults]\noutput_psnr_db = 35\n", 1)
    one_case = with_default.replace("threshold_pct = 3.0", "threshold_pct = 3.0\noutput_psnr_db = 30.5", 1)
    resolved = {case.slug: case for case in parse_suite(one_case).cases}
    assert resolved["z-image-turbo-serve-gb300"].output_psnr_db == 30.5
    assert {
        case.output_psnr_db for slug, case in resolved.items() if slug != "z-image-turbo-serve-gb300"
    } == {35}
    # Like a threshold, the tolerance is no part of what a case measures: same hash, same series.
    hashes = {case.slug: case.config_hash() for case in shipped.cases}
    assert {slug: case.config_hash() for slug, case in resolved.items()} == hashes
    sync_suites(session=session, suites=load_suites(SHIPPED_SUITES))
    (tmp_path / "suite.toml").write_text(one_case)
    report = sync_suites(session=session, suites=load_suites(tmp_path))
    assert report.new_versions == []
    case = session.scalar(
        select(Case).where(Case.slug == "z-image-turbo-serve-gb300", Case.is_current.is_(True))
    )
    assert case is not None
    assert case.output_psnr_db == 30.5


@pytest.mark.parametrize("value", ["5", "101", '"high"'])
def test_output_tolerance_must_be_a_psnr_in_range(value: str) -> None:
    text = SUITE_TEXT.replace("threshold_pct = 3.0", f"threshold_pct = 3.0\noutput_psnr_db = {value}", 1)
    with pytest.raises(SuiteError, match="output_psnr_db"):
        parse_suite(text)


# --- [[schedule]] -----------------------------------------------------------------------------

SCHEDULE = SUITE_TEXT[SUITE_TEXT.index("[[schedule]]") :]


def _schedule_line(key: str) -> int:
    """The line of the shipped schedule's ``key = ...``."""
    offset = SUITE_TEXT.index(f"\n{key} =", SUITE_TEXT.index("[[schedule]]"))
    return SUITE_TEXT.count("\n", 0, offset) + 2


@pytest.mark.parametrize(
    ("old", "new", "key", "field", "message"),
    [
        (
            'cron = "0 2 * * *"',
            'cron = "0 25 * * *"',
            "cron",
            "schedule[0].cron",
            "invalid cron '0 25 * * *'",
        ),
        ('cron = "0 2 * * *"', 'cron = "0 2 * *"', "cron", "schedule[0].cron", "five fields"),
        (
            'timezone = "Asia/Shanghai"',
            'timezone = "Asia/Peking"',
            "timezone",
            "schedule[0].timezone",
            "unknown timezone 'Asia/Peking'",
        ),
        (
            'hardware = ["H200", "GB300"]',
            'hardware = ["H200", "B200"]',
            "hardware",
            "schedule[0].hardware",
            "unknown hardware kind 'B200'",
        ),
        (
            'hardware = ["H200", "GB300"]',
            'hardware = ["H100"]',
            "hardware",
            "schedule[0].hardware",
            "no case runs on it",
        ),
        (
            "backfill = 10",
            "backfill = -1",
            "backfill",
            "schedule[0].backfill",
            "number of commits from 0 to 1000",
        ),
        ('name = "sglang-nightly"', 'name = "Nightly!"', "name", "schedule[0].name", "pattern"),
        (
            "backfill = 10",
            'backfill = 10\nbranchh = "main"',
            "backfill",
            "schedule[0].branchh",
            "unknown field",
        ),
    ],
)
def test_malformed_schedule_names_file_line_and_field(
    old: str, new: str, key: str, field: str, message: str
) -> None:
    assert old in SCHEDULE
    broken = SUITE_TEXT.replace(SCHEDULE, SCHEDULE.replace(old, new, 1))
    with pytest.raises(SuiteError) as caught:
        parse_suite(broken, "suites/broken.toml")
    error = caught.value
    assert error.field == field
    assert message in error.message
    expected = _schedule_line(key) + (1 if field.endswith("branchh") else 0)
    assert error.line == expected
    assert str(error).startswith(f"suites/broken.toml:{expected}")


def test_schedule_defaults_come_from_the_repository_and_the_cases() -> None:
    minimal = SUITE_TEXT.replace(SCHEDULE, '[[schedule]]\nname = "plain"\ncron = "30 1 * * 1-5"\n')
    [plain] = parse_suite(minimal).schedules
    assert (plain.branch, plain.timezone, plain.backfill_limit) == ("main", "UTC", 0)
    assert plain.hardware == ["H200", "GB300"]  # every kind a case runs on, not H100
    everything = SUITE_TEXT.replace("backfill = 10", 'backfill = true\nbranch = "release/v0.5"')
    [nightly] = parse_suite(everything).schedules
    assert (nightly.branch, nightly.backfill_limit) == ("release/v0.5", 20)
    assert parse_suite(SUITE_TEXT.replace(SCHEDULE, "")).schedules == []


def test_duplicate_schedule_names_are_refused(tmp_path: Path) -> None:
    twice = SUITE_TEXT + "\n" + SCHEDULE
    with pytest.raises(SuiteError) as caught:
        parse_suite(twice, "suites/broken.toml")
    assert caught.value.field == "schedule[1].name"
    assert "duplicate schedule name 'sglang-nightly'" in caught.value.message
    (tmp_path / "a.toml").write_text(SUITE_TEXT)
    other = SUITE_TEXT.replace('name = "sglang-diffusion"', 'name = "other-suite"', 1)
    for old_slug in {case.slug for case in parse_suite(SUITE_TEXT).cases}:
        other = other.replace(f'slug = "{old_slug}"', f'slug = "x-{old_slug}"')
    (tmp_path / "b.toml").write_text(other)
    with pytest.raises(SuiteError, match="also in"):
        load_suites(tmp_path)


# --- paths (which files select a case for a bare /perf) -----------------------------------------


def test_case_paths_join_the_shared_paths_of_the_defaults() -> None:
    suite = load_suite(SUITES / "sglang-diffusion.toml")
    qwen = next(case for case in suite.cases if case.slug == "qwen-image-t2i-1024")
    assert qwen.paths[0] == "python/sglang/multimodal_gen/**/qwen_image*.py"
    assert "sgl-kernel/**" in qwen.paths  # from [defaults]
    assert all(case.paths for case in suite.cases)


@pytest.mark.parametrize("bad", ["/etc/passwd", "python/../../secret.py"])
def test_paths_must_stay_inside_the_repository(bad: str) -> None:
    text = SUITE_TEXT.replace('paths = ["python/sglang/multimodal_gen/**/flux*.py"]', f'paths = ["{bad}"]', 1)
    with pytest.raises(SuiteError, match="relative to the repository root"):
        parse_suite(text, "suites/broken.toml")


def test_changed_paths_update_the_case_in_place(session: Session, tmp_path: Path) -> None:
    """Paths say when to run a case, not what it measures: no new version, no new series."""
    (tmp_path / "suite.toml").write_text(SUITE_TEXT.replace("**/flux*.py", "**/flux_*.py", 1))
    report = sync_suites(session=session, suites=load_suites(tmp_path))
    assert report.updated == ["flux1-dev-serve-gb300"]
    assert report.new_versions == []
    case = session.scalar(select(Case).where(Case.slug == "flux1-dev-serve-gb300", Case.is_current.is_(True)))
    assert case is not None
    assert case.version == 1
    assert case.paths[0] == "python/sglang/multimodal_gen/**/flux_*.py"


# --- confirmation_max_rounds (the cap on a suspect's paired rounds) -----------------------------

ZIMAGE = "z-image-turbo-serve-gb300"  # the one case with `threshold_pct = 3.0`, on GB300 only
CAP_LINE = SUITE_TEXT.count("\n", 0, SUITE_TEXT.index("threshold_pct = 3.0")) + 2


def _with_cap(cap: str) -> str:
    """The tests' suite with ``cap`` (TOML lines) in the Z-Image case, just after its threshold."""
    return SUITE_TEXT.replace("threshold_pct = 3.0", f"threshold_pct = 3.0\n{cap}", 1)


def test_the_confirmation_cap_is_the_case_s_or_its_hardware_kind_s_and_keeps_the_version() -> None:
    shipped = parse_suite(SUITE_TEXT)
    assert {(case.confirmation_max_rounds, len(case.confirmation_caps)) for case in shipped.cases} == {
        (None, 0)  # unset: the policy's 16
    }
    raised = {case.slug: case for case in parse_suite(_with_cap("confirmation_max_rounds = 32")).cases}
    assert raised[ZIMAGE].confirmation_max_rounds == 32
    assert raised[ZIMAGE].confirmation_caps == {}
    per_kind = parse_suite(_with_cap("confirmation_max_rounds = 32\nconfirmation_caps = { GB300 = 48 }"))
    [zimage] = [case for case in per_kind.cases if case.slug == ZIMAGE]
    assert (zimage.confirmation_max_rounds, zimage.confirmation_caps) == (32, {"GB300": 48})
    for good in (2, 64):
        assert (
            parse_suite(_with_cap(f"confirmation_max_rounds = {good}")).cases[6].confirmation_max_rounds
            == good
        )
    # Like a threshold, the cap is no part of what a case measures: same hash, same series.
    hashes = {case.slug: case.config_hash() for case in shipped.cases}
    assert {case.slug: case.config_hash() for case in per_kind.cases} == hashes


@pytest.mark.parametrize(
    ("cap", "field", "message"),
    [
        ("confirmation_max_rounds = 1", "confirmation_max_rounds", "greater than or equal to 2"),
        ("confirmation_max_rounds = 0", "confirmation_max_rounds", "greater than or equal to 2"),
        ("confirmation_max_rounds = 65", "confirmation_max_rounds", "less than or equal to 64"),
        ('confirmation_max_rounds = "32"', "confirmation_max_rounds", "valid integer"),
        ("confirmation_max_rounds = 32.0", "confirmation_max_rounds", "valid integer"),
        ("confirmation_max_rounds = true", "confirmation_max_rounds", "valid integer"),
        ("confirmation_caps = { GB300 = 100 }", "confirmation_caps.GB300", "less than or equal to 64"),
        (
            "confirmation_caps = { H200 = 32 }",
            "confirmation_caps.H200",
            "confirmation cap for 'H200', which is not in this case's hardware list",
        ),
        ("confirmation-max-rounds = 32", "confirmation-max-rounds", "unknown field"),
    ],
)
def test_a_confirmation_cap_must_be_a_whole_number_of_rounds_from_2_to_64(
    cap: str, field: str, message: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(_with_cap(cap), "suites/broken.toml")
    error = caught.value
    assert error.field == f"cases[6].{field}"
    assert message in error.message
    assert error.line == CAP_LINE


def test_the_cap_s_bounds_are_the_policy_s_first_rounds_and_any_comparison_s_most() -> None:
    assert POLICY.initial_rounds == MIN_CONFIRMATION_ROUNDS
    assert MAX_CONFIRMATION_ROUNDS == MAX_ROUNDS


def test_a_changed_confirmation_cap_updates_the_case_in_place(session: Session, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(
        _with_cap("confirmation_max_rounds = 32\nconfirmation_caps = { GB300 = 48 }")
    )
    report = sync_suites(session=session, suites=load_suites(tmp_path))
    assert (report.updated, report.new_versions) == ([ZIMAGE], [])
    case = session.scalar(select(Case).where(Case.slug == ZIMAGE, Case.is_current.is_(True)))
    assert case is not None
    assert (case.version, case.confirmation_max_rounds, case.confirmation_cap_for("GB300")) == (1, 32, 48)
    assert [entry.confirmation_max_rounds for entry in case.hardware] == [48]
    assert sync_suites(session=session, suites=load_suites(tmp_path)).unchanged.count(ZIMAGE) == 1
    # Taken out of the file, the cap is the policy's again.
    report = sync_suites(session=session, suites=load_suites(SUITES))
    assert report.updated == [ZIMAGE]
    session.refresh(case)
    assert (case.confirmation_max_rounds, case.confirmation_cap_for("GB300")) == (None, None)
