"""A toy text-to-image diffusion pipeline that runs on a CPU and talks like ``sglang generate``.

It exists so that perftrack can be demonstrated without a GPU: a small seeded DiT compiled with
``torch.compile``, timed the way sglang times its stages and denoising steps, printing the same log
lines and writing the same ``--perf-dump-path`` JSON.
"""

__version__ = "0.2.0"
