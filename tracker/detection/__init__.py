"""Change detection on series: alerts, their log, paired confirmation, bisection, triage."""
