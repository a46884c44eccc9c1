"""What every page module shares: the templates, the page response (never cached) and the redirect after a post."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from marketsync.errors import ApiError
from marketsync.people.service import Person

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
# Every page is per person: never stored by a shared or browser cache.
NO_STORE = {"Cache-Control": "no-store"}


def page_router() -> APIRouter:
    return APIRouter(prefix="/app", include_in_schema=False)


def page(request: Request, template: str, person: Person | None, status: int = 200, **context: Any) -> Response:
    return templates.TemplateResponse(
        request, template, {"person": person, **context}, status_code=status, headers=NO_STORE
    )


def see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=NO_STORE)


def errors_of(exc: ApiError) -> dict[str, list[str]]:
    """The API's own per-field messages, shown beside the fields; a refusal with none shows its title."""
    return exc.errors or {"": [exc.title]}


def is_partial(request: Request) -> bool:
    """An htmx refresh of a page's live part (progress, health), not a whole page."""
    return bool(request.headers.get("hx-request"))
