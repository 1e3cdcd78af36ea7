"""A/B comparisons of candidates in interleaved rounds, A/A calibration, and their summaries."""
