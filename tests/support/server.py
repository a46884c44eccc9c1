"""A real uvicorn server on a loopback ephemeral port, inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn
from fastapi import FastAPI


@contextlib.asynccontextmanager
async def serve(app: FastAPI, host: str = "127.0.0.1") -> AsyncIterator[str]:
    config = uvicorn.Config(app, host=host, port=0, log_config=None, access_log=False, lifespan="on", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
