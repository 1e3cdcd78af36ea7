"""The composition root: the ``perftrack`` command line and the demo.

The only package that imports :mod:`web`, :mod:`tracker` and :mod:`runners` together (the demo
runs a tracker and a runner in one process; ``perftrack runner`` starts an agent, ``perftrack
serve`` the web app). Nothing imports it.
"""
