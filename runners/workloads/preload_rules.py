"""Whether a run may be forked from the preloaded interpreter (the zygote) instead of started fresh.

A fork stands in for a start only when the child would import what a fresh process imports: the
command is ``<the zygote's python> -m MODULE ...``, the environment matches the zygote's in every
variable read at import (:data:`IMPORT_SENSITIVE`), and neither the working directory nor
``PYTHONPATH`` provides a module of the preloaded set. :func:`refusal` says why not, or ``None``;
:mod:`runners.workloads.preload` acts on it.
"""

from __future__ import annotations

import importlib.machinery
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# Variables torch, OpenMP, MKL, OpenBLAS, the dynamic loader or Python itself read when a module is
# imported or the interpreter starts: a job whose values differ cannot use the zygote's imports.
# PYTHONPATH is the exception: the child rebuilds sys.path from its own (it only places imports).
IMPORT_SENSITIVE = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "CUDA", "LD_", "PYTHON")
REBUILT_IN_CHILD = frozenset({"PYTHONPATH"})


def import_sensitive(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that must match the zygote's for a fork to stand in for a start."""
    return {
        name: value
        for name, value in env.items()
        if name.startswith(IMPORT_SENSITIVE) and name not in REBUILT_IN_CHILD
    }


def module_command(argv: Sequence[str], python: str) -> tuple[str, list[str]] | None:
    """``(module, args)`` when ``argv`` is exactly ``python -m module args...``, else ``None``."""
    if len(argv) < 3 or argv[0] != python or argv[1] != "-m" or not argv[2] or argv[2].startswith("-"):
        return None
    return argv[2], list(argv[3:])


def refusal(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    python: str,
    zygote_env: Mapping[str, str] | None,
    modules: Sequence[str],
) -> str | None:
    """Why this run cannot be forked from the zygote (``None``: it can).

    ``zygote_env`` is the environment of the running zygote (``None``: none runs yet; the next one
    starts with this run's).
    """
    if module_command(argv, python) is None:
        return f"the command is not `{python} -m MODULE ...`"
    if zygote_env is not None:
        mine, theirs = import_sensitive(env), import_sensitive(zygote_env)
        differing = sorted(name for name in mine.keys() | theirs.keys() if mine.get(name) != theirs.get(name))
        if differing:
            return f"the environment differs from the preloaded interpreter's in {', '.join(differing)}"
    # What `python -m` puts before site-packages; a preloaded package found there would not be
    # the one a fresh process imports.
    front = [
        str(cwd),
        *(os.path.join(cwd, entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry),
    ]
    for top in sorted({name.split(".")[0] for name in modules}):
        if importlib.machinery.PathFinder.find_spec(top, front) is not None:
            return f"the working directory or PYTHONPATH provides the preloaded module {top!r}"
    return None
