"""The keep-alive race: a request sent on an idle connection just as the server closes it gets no response.

    .venv/bin/python -m bench.drills.keep_alive_race [--server-keep-alive 5] [--client-expiry 5] [--rounds 3]

uvicorn (as `serve` runs it: uvloop, httptools) on loopback, and httpx clients of one connection each. Every client
makes a request, waits an idle time between `server keep-alive - 0.03 s` and `+ 0.03 s` (1 ms steps), then makes a
second one; all of them at once. Prints how many second requests were answered, and which failed after what idle
time. Decision 0305: with both sides at 5 s (uvicorn's and httpx's defaults) a few fail; with the server keeping
connections longer than the client does (MARKETSYNC_HTTP_KEEP_ALIVE_S, 75 s), none can.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from typing import Any

import httpx
import uvicorn
import uvloop

from bench.support import free_port


async def ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


async def second_request_after(base: str, idle_s: float, client_expiry_s: float) -> str:
    """'answered', or the error class of a second request sent after `idle_s` on the first one's connection."""
    limits = httpx.Limits(max_connections=1, keepalive_expiry=client_expiry_s)
    async with httpx.AsyncClient(base_url=base, limits=limits) as client:
        await client.get("/")
        await asyncio.sleep(idle_s)
        try:
            await client.get("/")
        except httpx.TransportError as error:
            return type(error).__name__
        return "answered"


async def run(server_keep_alive_s: int, client_expiry_s: float, rounds: int) -> dict[str, Any]:
    port = free_port()
    config = uvicorn.Config(
        ok, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="off",
        timeout_keep_alive=server_keep_alive_s,
    )  # fmt: skip
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    # Around the first of the two expiries: where the server closes (the race), or where the client stops reusing.
    edge = min(server_keep_alive_s, client_expiry_s)
    idle_times = [round(edge - 0.03 + step / 1000, 3) for step in range(61)]
    base = f"http://127.0.0.1:{port}"
    outcomes = await asyncio.gather(
        *(second_request_after(base, idle, client_expiry_s) for idle in idle_times for _ in range(rounds))
    )
    server.should_exit = True
    await serving
    failures = Counter(
        f"{outcome} after {idle} s"
        for idle, outcome in zip([i for i in idle_times for _ in range(rounds)], outcomes, strict=True)
        if outcome != "answered"
    )
    return {
        "server_keep_alive_s": server_keep_alive_s,
        "client_expiry_s": client_expiry_s,
        "second_requests": len(outcomes),
        "answered": outcomes.count("answered"),
        "failed": dict(sorted(failures.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-keep-alive", type=int, default=5)
    parser.add_argument("--client-expiry", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(uvloop.run(run(args.server_keep_alive, args.client_expiry, args.rounds)), indent=2))


if __name__ == "__main__":
    main()
