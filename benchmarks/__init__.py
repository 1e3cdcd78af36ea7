"""Measured benchmarks: the toy incidents script and the detection-quality benchmark (``benchmarks.detection``)."""
