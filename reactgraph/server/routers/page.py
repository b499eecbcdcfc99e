"""The web page at ``/``, its icon at ``/favicon.ico`` and its static files under
``/static`` (none of them in the OpenAPI schema, none behind the API key)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = files("reactgraph.server") / "static"

router = APIRouter()


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    """The page, fetched anew on each load (``no-cache``) so that a new server's page is seen."""
    return FileResponse(str(STATIC_DIR / "index.html"), headers={"Cache-Control": "no-cache"})


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> FileResponse:
    """The page's icon, cached for a day."""
    return FileResponse(str(STATIC_DIR / "favicon.svg"), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=86400"})


def add_page(app: FastAPI) -> None:
    """Serve the page, its icon and its static files on ``app``."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
