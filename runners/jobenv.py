"""The environment of every process the agent starts for a job: an allow-list, never the agent's own.

A job runs code the agent did not write (a pull request's build and benchmark), so what it launches
(git, the build command, the benchmark and its preloaded interpreter, ``nvidia-smi`` and the version
probe) sees only the variables named in :data:`DEFAULT_ALLOWED` plus those the runner's configuration
adds (``perftrack runner --env-allow NAME``; ``NAME_*`` allows a prefix). The agent's token never
passes:

- ``PERFTRACK_*`` (the agent's own settings, its token among them) cannot be allowed at all;
- a variable whose value contains one of the agent's secrets is dropped, whatever its name;
- a name that looks like a secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*KEY*``, ...) passes
  only when allowed by its exact name (``--env-allow HF_TOKEN``), never through a pattern.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# What builds and benchmarks need: where programs and libraries are, the locale and time zone, the
# user, temporary and cache directories, which GPUs are visible, the Python environment, the
# caches and switches of torch, triton, inductor, CUDA, NCCL and Hugging Face, and proxies.
DEFAULT_ALLOWED: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "CC",
    "CXX",
    "CUDA_*",
    "CUDNN_*",
    "NVIDIA_*",
    "NCCL_*",
    "NVTE_*",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONHASHSEED",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "TORCH_*",
    "TORCHINDUCTOR_*",
    "TORCHDYNAMO_*",
    "PYTORCH_*",
    "TRITON_*",
    "SGLANG_*",
    "FLASHINFER_*",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_CACHE",
    "HF_HUB_ENABLE_HF_TRANSFER",
    "TRANSFORMERS_CACHE",
    "TRANSFORMERS_OFFLINE",
    "HUGGINGFACE_HUB_CACHE",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)
# The agent's own configuration, its token included: never passed on, even when named.
_NEVER_PREFIX = "PERFTRACK_"
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|KEY|AUTH|COOKIE|SESSION|SIGNATURE|CERT_PASS", re.IGNORECASE
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\*?$")


def looks_secret(name: str) -> bool:
    """Whether a variable's name suggests it holds a credential."""
    return bool(_SECRET_NAME.search(name))


@dataclass(frozen=True)
class JobEnvironment:
    """The allow-list policy: :data:`DEFAULT_ALLOWED` plus ``allow``; ``secrets`` never leave the agent."""

    allow: tuple[str, ...] = ()
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        for name in self.allow:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} is not a variable name (or a NAME_* prefix)")
            if name.upper().startswith(_NEVER_PREFIX):
                raise ValueError(f"{name!r}: the agent's own PERFTRACK_* settings are never passed on")

    def allows(self, name: str) -> bool:
        """Whether a variable of this name may reach a job's processes (its value aside)."""
        if name.upper().startswith(_NEVER_PREFIX):
            return False
        if name in self.allow or name in DEFAULT_ALLOWED:
            return True
        if looks_secret(name):
            return False  # a pattern never lets a credential through, only its exact name
        return any(_matches(pattern, name) for pattern in (*DEFAULT_ALLOWED, *self.allow))

    def environ(self, source: Mapping[str, str] | None = None) -> dict[str, str]:
        """The allowed part of ``source`` (``None``: this process's environment)."""
        source = os.environ if source is None else source
        secrets = [secret for secret in self.secrets if secret]
        return {
            name: value
            for name, value in source.items()
            if self.allows(name) and not any(secret in value for secret in secrets)
        }


def _matches(pattern: str, name: str) -> bool:
    return pattern.endswith("*") and name.startswith(pattern[:-1])


def job_environ(source: Mapping[str, str] | None = None, *, allow: Iterable[str] = ()) -> dict[str, str]:
    """The default policy's view of ``source`` (``None``: this process's environment)."""
    return JobEnvironment(allow=tuple(allow)).environ(source)
