"""GPU runner side of perftrack: the agent, candidate builder, workloads and output parsers.

Talks to the tracker only over HTTP; imports nothing from ``tracker``'s database layer.
"""
