"""The runner extra (``perftrack[runner]``): found or named, and a video refused clearly without PyAV."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

import runners
import runners.extra
from runners.outputs import OutputReadError


def without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``find_spec`` report ``names`` as not installed, as on a base install."""
    real = importlib.util.find_spec

    def find_spec(name: str) -> ModuleSpec | None:
        return None if name in names else real(name)

    monkeypatch.setattr(runners.extra, "find_spec", find_spec)


def test_an_install_with_the_extra_has_no_problem() -> None:
    assert runners.extra.missing_runner_modules() == []
    assert runners.extra.runner_extra_problem("perftrack runner") is None


def test_a_missing_module_is_named_with_its_use_and_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    without(monkeypatch, "torch")
    problem = runners.extra.runner_extra_problem("perftrack runner")
    assert problem == (
        "perftrack runner needs the runner extra, which this install lacks "
        "(missing: torch, to run the toy workload). Install it with: pip install 'perftrack[runner]'"
    )


def test_without_pyav_outputs_imports_and_a_video_is_refused_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A fresh runners.outputs, imported where `import av` fails; the originals come back afterwards.
    monkeypatch.setitem(sys.modules, "av", None)
    monkeypatch.delitem(sys.modules, "runners.video", raising=False)
    monkeypatch.delitem(sys.modules, "runners.outputs")
    monkeypatch.setattr(runners, "outputs", runners.outputs)
    bare = importlib.import_module("runners.outputs")
    video = tmp_path / "out.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")

    with pytest.raises(bare.OutputReadError, match=r"PyAV.*pip install 'perftrack\[runner\]'"):
        bare.read_output(video)
    assert bare.OutputReadError is not OutputReadError  # the module really was imported again
