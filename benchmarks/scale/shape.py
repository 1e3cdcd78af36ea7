"""The shape of a year of nightly history: cases, hardware kinds, per-model step times and noise."""

from __future__ import annotations

import random
from dataclasses import dataclass

# Hardware kinds and how fast each runs the same pipeline, relative to an H200.
HARDWARE: dict[str, tuple[str, float]] = {
    "H200": ("NVIDIA H200 141 GB (Hopper)", 1.0),
    "GB300": ("NVIDIA GB300 (Grace Blackwell Ultra)", 0.62),
    "H100": ("NVIDIA H100 80 GB (Hopper)", 1.38),
    "B200": ("NVIDIA B200 (Blackwell)", 0.71),
}


@dataclass(frozen=True)
class Family:
    """A model family: its model path, task, H200 ms per denoise step at 1024² and GPUs."""

    name: str
    model: str
    task: str
    step_ms: float
    num_gpus: int
    peak_memory_mb: float


FAMILIES = (
    Family("qwen-image", "Qwen/Qwen-Image-2512", "t2i", 263.7, 1, 61_500.0),
    Family("qwen-image-edit", "Qwen/Qwen-Image-Edit-2511", "i2i", 301.2, 1, 64_800.0),
    Family("flux", "black-forest-labs/FLUX.1-dev", "t2i", 182.4, 1, 38_900.0),
    Family("wan", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", "t2v", 1184.0, 8, 71_200.0),
    Family("hunyuanvideo", "hunyuanvideo-community/HunyuanVideo", "t2v", 2130.0, 8, 78_400.0),
    Family("z-image", "Tongyi-MAI/Z-Image-Turbo", "t2i", 96.3, 1, 24_100.0),
)
# Per-family variants: (slug suffix, step-time factor, extra params).
VARIANTS: tuple[tuple[str, float, dict[str, object]], ...] = (
    ("1024", 1.0, {"width": 1024, "height": 1024}),
    ("768", 0.58, {"width": 768, "height": 768}),
    ("1328", 1.62, {"width": 1328, "height": 1328}),
    ("1024-nocompile", 1.21, {"width": 1024, "height": 1024}),
    ("1024-cfg2", 1.93, {"width": 1024, "height": 1024, "guidance-scale": 7.5}),
    ("1024-bs2", 1.88, {"width": 1024, "height": 1024, "num-outputs-per-prompt": 2}),
    ("1024-fp8", 0.74, {"width": 1024, "height": 1024}),
    ("1024-cache", 0.81, {"width": 1024, "height": 1024}),
    ("512", 0.31, {"width": 512, "height": 512}),
    ("1024-offload", 1.44, {"width": 1024, "height": 1024}),
)


@dataclass(frozen=True)
class CaseShape:
    """One generated case: slug, family, step-time factor, parameters and flags."""

    slug: str
    family: Family
    factor: float
    params: dict[str, object]
    flags: dict[str, object]


def case_shapes(count: int) -> list[CaseShape]:
    """``count`` cases cycling through families and their variants (60: 6 families × 10)."""
    shapes = []
    for index in range(count):
        family = FAMILIES[index % len(FAMILIES)]
        suffix, factor, extra = VARIANTS[(index // len(FAMILIES)) % len(VARIANTS)]
        round_ = index // (len(FAMILIES) * len(VARIANTS))
        slug = f"scale-{family.name}-{family.task}-{suffix}" + (f"-r{round_}" if round_ else "")
        params: dict[str, object] = {"prompt": "a red fox in a snowy forest at dawn", "seed": 42 + round_}
        params.update(extra)
        params["num-inference-steps"] = 50
        flags: dict[str, object] = {
            "enable-torch-compile": "nocompile" not in suffix,
            "warmup": True,
            "dit-cpu-offload": "true" if "offload" in suffix else "false",
        }
        shapes.append(CaseShape(slug=slug, family=family, factor=factor, params=params, flags=flags))
    return shapes


def suite_toml(shapes: list[CaseShape], hardware: list[str]) -> str:
    """A suite file declaring the cases on every one of ``hardware``."""
    lines = [
        "[suite]",
        'name = "scale"',
        'description = "A year of nightly history at real shape (benchmarks/scale)"',
        "",
        "[repository]",
        'name = "sglang"',
        'url = "https://github.com/sgl-project/sglang.git"',
        'default_branch = "main"',
        "",
    ]
    for name in hardware:
        lines += [f"[hardware.{name}]", f'description = "{HARDWARE[name][0]}"', ""]
    lines += ["[defaults]", "threshold_pct = 2.0", 'workload = "sglang"', 'mode = "generate"', ""]
    kinds = ", ".join(f'"{name}"' for name in hardware)
    for shape in shapes:
        lines += [
            "[[cases]]",
            f'slug = "{shape.slug}"',
            f'title = "{shape.family.model} {shape.slug}"',
            f'model = "{shape.family.model}"',
            f'family = "{shape.family.name}"',
            f'task = "{shape.family.task}"',
            f"hardware = [{kinds}]",
            f"num_gpus = {shape.family.num_gpus}",
            "",
            "[cases.params]",
            *(f"{key} = {_toml(value)}" for key, value in shape.params.items()),
            "",
            "[cases.flags]",
            *(f"{key} = {_toml(value)}" for key, value in shape.flags.items()),
            "",
        ]
    return "\n".join(lines)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


@dataclass(frozen=True)
class SeriesShape:
    """A series' level over the year: base ms per step, noise CV and step changes (night, factor)."""

    base_ms: float
    noise_cv: float
    changes: tuple[tuple[int, float], ...]

    def level(self, night: int) -> float:
        """The true step time on a night, after every step change so far."""
        value = self.base_ms
        for start, factor in self.changes:
            if night >= start:
                value *= factor
        return value


def series_shape(case: CaseShape, hardware: str, nights: int, rng: random.Random) -> SeriesShape:
    """Level, noise (0.5–1 %) and, for about one series in four, one or two step changes of 3–10 %."""
    base = case.family.step_ms * case.factor * HARDWARE[hardware][1]
    changes: list[tuple[int, float]] = []
    if nights >= 20 and rng.random() < 0.25:
        for _ in range(rng.choice((1, 1, 2))):
            night = rng.randrange(10, nights - 5)
            size = rng.uniform(0.03, 0.10)
            changes.append((night, 1 + size if rng.random() < 0.6 else 1 - size))
    return SeriesShape(
        base_ms=round(base, 3), noise_cv=rng.uniform(0.005, 0.01), changes=tuple(sorted(changes))
    )
