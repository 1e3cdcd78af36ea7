"""The runner extra (``perftrack[runner]``): what a GPU host installs besides the tracker's base install.

The base install serves, migrates, imports logs and runs the bot; a runner also decodes saved videos
(PyAV) and runs the toy workload in its own interpreter (torch). Both are looked up, never imported:
importing torch costs seconds.
"""

from __future__ import annotations

from importlib.util import find_spec

RUNNER_EXTRA = "pip install 'perftrack[runner]'"

# The modules the extra brings (by import name), each with what the runner needs it for.
RUNNER_MODULES = {
    "av": "PyAV, to decode saved videos",
    "torch": "torch, to run the toy workload",
}


def missing_runner_modules() -> list[str]:
    """The modules of the runner extra this interpreter cannot import, each with its use."""
    return [use for name, use in RUNNER_MODULES.items() if find_spec(name) is None]


def runner_extra_problem(command: str) -> str | None:
    """Why ``command`` cannot run in this install (``None``: it can), naming the install that fixes it."""
    missing = missing_runner_modules()
    if not missing:
        return None
    return (
        f"{command} needs the runner extra, which this install lacks (missing: {'; '.join(missing)}). "
        f"Install it with: {RUNNER_EXTRA}"
    )
