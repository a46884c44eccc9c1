"""The floor: a bare FastAPI JSON GET, served the same way as marketsync (one uvicorn process)."""

from __future__ import annotations

from fastapi import FastAPI

app = FastAPI()


@app.get("/")
async def root() -> dict[str, str]:
    return {"status": "ok"}
