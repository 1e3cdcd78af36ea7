"""The objects GitHub's REST API answers with, in full, for the fake GitHub: the fake lives in
:mod:`perftrack.fakegithub` (the demo serves it too); its shapes are re-exported here for the tests."""

from perftrack.fakegithub.shapes import *  # noqa: F403
from perftrack.fakegithub.shapes import __all__ as __all__
