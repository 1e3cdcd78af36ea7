"""Path globs and the cases the files of a pull request select."""

from __future__ import annotations

import pytest

from tracker.catalog.paths import path_spec, select_cases

DIT = "python/sglang/multimodal_gen/runtime/models/dits/qwen_image.py"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("python/sglang/multimodal_gen/**/qwen_image*.py", DIT, True),
        (
            "python/sglang/multimodal_gen/**/qwen_image*.py",
            "python/sglang/multimodal_gen/qwen_image.py",
            True,
        ),
        ("python/sglang/multimodal_gen/**/qwen_image*.py", "python/sglang/srt/models/qwen_image.py", False),
        ("python/sglang/multimodal_gen/*/qwen_image.py", DIT, False),  # * stays inside one segment
        (
            "python/sglang/multimodal_gen/runtime/layers/**",
            "python/sglang/multimodal_gen/runtime/layers/a/b.py",
            True,
        ),
        (
            "python/sglang/multimodal_gen/runtime/layers/**",
            "python/sglang/multimodal_gen/runtime/layersx.py",
            False,
        ),
        ("sgl-kernel/", "sgl-kernel/csrc/attention.cu", True),
        ("*.cu", "sgl-kernel/csrc/attention.cu", True),  # no slash: any directory
        ("*.cu", "sgl-kernel/csrc/attention.cuh", False),
        ("toydit/norm.py", "toydit/norm.py", True),
        ("toydit/norm.py", "other/toydit/norm.py", False),  # a slash anchors at the root
        ("toydit/n?rm.py", "toydit/norm.py", True),
        ("toydit/[!o]*.py", "toydit/offload.py", False),
        ("toydit/[!o]*.py", "toydit/norm.py", True),
        ("docs/a+b (1).md", "docs/a+b (1).md", True),  # regex characters are literal
        ("docs/a+b (1).md", "docs/aab (1).md", False),
    ],
)
def test_glob_matches(pattern: str, path: str, expected: bool) -> None:
    assert path_spec((pattern,)).match_file(path) is expected


def test_compiled_globs_are_cached() -> None:
    assert path_spec(("a/**/b.py",)) is path_spec(("a/**/b.py",))


def test_a_negated_glob_excludes_what_the_case_selected() -> None:
    selection = select_cases([("kernels", ["sgl-kernel/", "!*.md"])], ["sgl-kernel/README.md"])
    assert selection.fallback  # only a README changed: nothing selects the case
    assert select_cases([("kernels", ["sgl-kernel/", "!*.md"])], ["sgl-kernel/a.cu"]).chosen == ["kernels"]


CASES = [
    ("qwen-image-t2i-1024", ["python/**/qwen_image*.py", "python/shared/**"]),
    ("wan2.2-t2v-a14b", ["python/**/wan*.py", "python/shared/**"]),
]


def test_files_select_the_cases_they_touch_and_say_which_file() -> None:
    selection = select_cases(CASES, ["README.md", DIT])
    assert selection.chosen == ["qwen-image-t2i-1024"]
    assert not selection.fallback
    assert selection.because == {"qwen-image-t2i-1024": DIT}
    text = selection.describe(2)
    assert "chosen from the 2 files" in text
    assert f"`qwen-image-t2i-1024` (`{DIT}`)" in text


def test_shared_code_selects_every_case() -> None:
    selection = select_cases(CASES, ["python/shared/attention.py"])
    assert selection.chosen == ["qwen-image-t2i-1024", "wan2.2-t2v-a14b"]


def test_files_that_select_nothing_run_every_case_and_say_so() -> None:
    selection = select_cases(CASES, ["docs/index.md"])
    assert selection.fallback
    assert selection.chosen == ["qwen-image-t2i-1024", "wan2.2-t2v-a14b"]
    assert "none of the 1 files this PR touches selects a case" in selection.describe(1)
    assert select_cases([("a", [])], ["x.py"]).chosen == ["a"]  # cases without paths: the fallback
