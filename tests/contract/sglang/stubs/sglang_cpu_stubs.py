"""Stand-ins for the packages sglang imports that this CPU machine cannot (or should not) install.

The contract probe (``tests/contract/sglang/probe.py``) imports this module first, in its own process
only: it is not a ``sitecustomize`` and changes no other interpreter. It puts one finder at the front
of ``sys.meta_path`` that answers for exactly these top-level packages (:data:`STUBBED_PACKAGES`) and
everything below them:

``triton``
    About 1 GB of GPU compiler, with no use without a GPU. sglang imports it at module level all over
    (``sglang.srt.utils.common``, the diffusion attention backends) to *define* kernels with
    ``@triton.jit`` / ``@triton.autotune(...)`` and to compare ``triton.__version__``; the parser never
    runs a kernel. The stand-in's decorators hand the function back unchanged, ``__version__`` is
    :data:`TRITON_VERSION`, and ``cdiv`` / ``next_power_of_2`` / ``Config`` behave like triton's.
``torchvision``
    PyPI's build does not load beside this machine's CPU build of torch 2.13 ("operator
    torchvision::nms does not exist"). sglang imports ``torchvision.transforms`` at module level in
    pipeline and model modules that the CLI reaches; it only uses them on images. ``transformers``
    also asks ``importlib.metadata`` for torchvision's version, so ``stubs/`` carries a
    ``torchvision-0.28.0.dist-info`` (0.28 is the release that pairs with torch 2.13).
``torchaudio``
    PyPI has no release for torch 2.13 (the newest is 2.11; sglang 0.5.23 pins 2.11.0 for its CUDA
    torch 2.14). Only pipeline modules import it (JoyEcho's memory stage), so without a stand-in
    the pipeline registry skips them and answers differently than a full install would.
``imageio_ffmpeg``
    A 165 MB ffmpeg binary. ``sglang.multimodal_gen.runtime.entrypoints.utils`` imports it at module
    level and calls ``get_ffmpeg_exe()`` only when it writes a video.
``cv2``
    opencv-python-headless: a 50 MB download, 170 MB installed. sglang uses it to process images and
    3D meshes; 0.5.10 imports it at module level through ``runtime/utils/mesh3d_utils.py`` from the
    pipeline stages every CLI command imports, and 0.5.23's pipeline registry skips the Hunyuan3D and
    Wan-Animate pipelines without it.

One attribute of the real CPU torch is added too, by :func:`install`: ``torch.cpu`` has no
``get_device_properties``, and 0.5.10's triton norm kernels (``sglang/jit_kernel/diffusion/triton/
norm.py``) call ``torch.get_device_module().get_device_properties(...)`` at import time to size their
autotune configs; the pipeline registry imports them, so every ``ServerArgs`` built from a model path
failed with ``AttributeError``. The stand-in answers properties with ``warp_size`` None, for which that
code falls back to 32, as it does on a GPU that does not say.

Any attribute of a stand-in module is another stand-in: a name that starts with a capital letter is a
class (so ``class K(triton.runtime.KernelInterface)`` works), anything else a module that, called,
acts as a pass-through decorator. Nothing here pretends to compute: a parser or a logger that reached
a stand-in at run time would get a stand-in back, which the contract tests would notice.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

STUBBED_PACKAGES = ("triton", "torchvision", "torchaudio", "imageio_ffmpeg", "cv2")
# A triton release that sglang's version checks accept (they compare against 2.2 and 3.0 at import).
TRITON_VERSION = "3.5.0"
TORCHVISION_VERSION = "0.28.0"


class _StubClassMeta(type):
    """The type of a stand-in class: its attributes are stand-ins too (``tl.constexpr``, enums)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_module(f"{cls.__module__}.{cls.__name__}.{name}")


class StubModule(types.ModuleType):
    """A stand-in module whose every attribute is another stand-in."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package, so ``import triton.language`` is allowed
        self.__spec__ = importlib.machinery.ModuleSpec(name, _FINDER, is_package=True)
        self.__file__ = __file__

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        full_name = f"{self.__name__}.{name}"
        value: Any
        if name[:1].isupper():
            value = _StubClassMeta(name, (), {"__module__": self.__name__})
        else:
            value = _stub_module(full_name)
        setattr(self, name, value)
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # ``@triton.jit`` gets the function; ``@triton.autotune(configs=...)`` gets options first.
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _pass_through

    def __iter__(self) -> Any:
        return iter(())

    def __repr__(self) -> str:
        return f"<stand-in module {self.__name__!r} (tests/contract/sglang/stubs)>"


def _pass_through(function: Callable[..., Any]) -> Callable[..., Any]:
    return function


def _stub_module(name: str) -> StubModule:
    module = sys.modules.get(name)
    if isinstance(module, StubModule):
        return module
    module = StubModule(name)
    sys.modules[name] = module
    return module


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of :data:`STUBBED_PACKAGES` and their submodules with stand-ins."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in STUBBED_PACKAGES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == "triton":
            _fill_triton(module)
        elif module.__name__ == "torchvision":
            module.__version__ = TORCHVISION_VERSION  # type: ignore[attr-defined]


class _TritonConfig:
    """``triton.Config``: kept as given, as the real one keeps its arguments."""

    def __init__(self, kwargs: dict[str, Any] | None = None, *args: Any, **options: Any) -> None:
        self.kwargs = dict(kwargs or {})
        self.args = args
        self.options = options


def _cdiv(numerator: int, denominator: int) -> int:
    return -(numerator // -denominator)


def _next_power_of_2(number: int) -> int:
    return 1 if number <= 1 else 1 << (number - 1).bit_length()


def _fill_triton(module: types.ModuleType) -> None:
    module.__version__ = TRITON_VERSION  # type: ignore[attr-defined]
    module.cdiv = _cdiv  # type: ignore[attr-defined]
    module.next_power_of_2 = _next_power_of_2  # type: ignore[attr-defined]
    module.Config = _TritonConfig  # type: ignore[attr-defined]


_FINDER = _StubFinder()


class _CpuDeviceProperties:
    """What ``torch.cpu.get_device_properties`` answers: a device that states no warp size."""

    name = "cpu"
    warp_size = None


def _cpu_device_properties(device: object = None) -> _CpuDeviceProperties:
    return _CpuDeviceProperties()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` and fill ``torch.cpu``'s gap (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    import torch  # the real CPU build from the project venv; sglang imports it first thing anyway

    if not hasattr(torch.cpu, "get_device_properties"):
        torch.cpu.get_device_properties = _cpu_device_properties  # type: ignore[attr-defined]
