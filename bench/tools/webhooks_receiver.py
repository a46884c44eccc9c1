"""The benchmark's HTTPS receiver, run as its own process: answers 200 to every POST after reading the body.

python -m bench.tools.webhooks_receiver CERT_PEM   (prints {"port": N} once listening on 127.0.0.1)
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import uvicorn


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = bool(message.get("more_body"))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def main(certfile: str) -> None:
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        lifespan="off",
        ws="none",
        ssl_certfile=certfile,
        ssl_keyfile=certfile,
        backlog=1024,
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    print(json.dumps({"port": server.servers[0].sockets[0].getsockname()[1]}), flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
