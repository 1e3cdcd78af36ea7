"""Browser libraries served by perftrack itself from installed packages (never a CDN).

The dashboard must work on an air-gapped cluster: plotly.js comes from the ``plotly`` wheel's
``package_data``, read once and served with a long cache lifetime.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

router = APIRouter(include_in_schema=False)


@cache
def plotly_js() -> Path:
    """Where the installed plotly wheel keeps its minified plotly.js bundle."""
    path = Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))
    if not path.is_file():
        raise RuntimeError(f"the plotly package has no bundled plotly.min.js at {path}")
    return path


@router.get("/vendor/plotly.min.js")
def plotly_bundle() -> FileResponse:
    """plotly.js, as bundled in the installed ``plotly`` package."""
    return FileResponse(
        plotly_js(),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )
