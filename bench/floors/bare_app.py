"""Floors served the same way as marketsync (one uvicorn process): a bare FastAPI JSON GET, and a bare POST
answering with fixed bytes (BARE_BODY_FILE, read once), i.e. HTTP alone for a response of a given size."""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import Response

app = FastAPI()
_BODY_FILE = os.environ.get("BARE_BODY_FILE")
_BODY = Path(_BODY_FILE).read_bytes() if _BODY_FILE else b"{}"


@app.get("/")
async def root() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/body")
async def body() -> Response:
    return Response(_BODY, media_type="application/json")
