"""The service's own logging set-up and Prometheus metrics."""
