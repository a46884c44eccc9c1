"""The fixed cost of a request against its floor (DESIGN.md §6): an authenticated no-op, GET /api/marketplaces and
POST /connect/token next to a bare FastAPI GET, all served at once, driven in alternating rounds.

    .venv/bin/python -m bench.runs.foundation_http [--seconds 3] [--rounds 3] [--connections 32]
                                              [--backends sqlite,postgresql]

One uvicorn process per server (`marketsync serve --no-workers`, logs at INFO to /dev/null, as deployed; the floor:
bench/floors/bare_app.py on uvicorn with uvloop and httptools), wrk with one thread on loopback, each target in turn for
`--seconds`, `--rounds` times; medians of the rounds. The CPU probe (a fixed loop) is timed before and after.
"GET authenticated no-op" is the service's app plus one route that only authenticates (`MarketplacesReader`,
`RuntimeDep`) and answers `{}`: the fixed cost every API request pays, served by the same code
(`--serve-fixed-cost PORT`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import statistics
import sys

import httpx
from fastapi import APIRouter, FastAPI
from starlette.responses import Response

from bench.support import cpu_probe_ms, free_port, marketsync, print_figures, process, scratch_database, wrk
from marketsync.app import create_app
from marketsync.auth.dependencies import REQUEST_DEPENDENCIES, MarketplacesReader, RuntimeDep
from marketsync.http import lean_routes
from marketsync.marketplaces.endpoints import router as marketplaces_router
from marketsync.runtime import Runtime

FIXED_COST_PATH = "/api/bench/authenticated-noop"

TOKEN_LUA = """
wrk.method = "POST"
wrk.body = "grant_type=client_credentials&client_id={client_id}&client_secret={secret}"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
"""


def service_env(database_url: str, var_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update(
        {
            "MARKETSYNC_DATABASE_URL": database_url,
            "MARKETSYNC_VAR_DIR": var_dir,
            "MARKETSYNC_ENCRYPTION_KEYS": "b1:" + base64.urlsafe_b64encode(b"b" * 32).decode(),
            "MARKETSYNC_SECRET_HASH_KEY": base64.urlsafe_b64encode(b"s" * 32).decode(),
            "MARKETSYNC_RATE_LIMIT": "100000000/minute",
            "MARKETSYNC_TOKEN_FAILURE_LIMIT": "100000000/minute",
        }
    )
    return env


def fixed_cost_app(rt: Runtime) -> FastAPI:
    """The service's app with one authenticate-only route, routed at the position of GET /api/marketplaces."""
    app = create_app(rt)
    router = APIRouter()

    @router.get(FIXED_COST_PATH)
    async def authenticated_noop(caller: MarketplacesReader, rt: RuntimeDep) -> Response:
        return Response(b"{}", media_type="application/json")

    (route,) = router.routes
    position = next(i for i, existing in enumerate(app.router.routes) if existing in marketplaces_router.routes)
    app.router.routes.insert(position, route)
    # The same direct call as the service's routes (kit/lean_routes.py): it was added after create_app installed it.
    lean_routes.install(app, REQUEST_DEPENDENCIES)
    return app


def serve_fixed_cost(port: int) -> None:
    from marketsync.startup import serve_http

    serve_http(fixed_cost_app, "127.0.0.1", port)


def servers(backend: str, stack: contextlib.ExitStack) -> dict[str, tuple[str, dict[str, str], str | None]]:
    """The service (`serve --no-workers`) and the no-op app on a scratch database, stopped when `stack` closes:
    {name: (url, headers, wrk script)}."""
    url = stack.enter_context(scratch_database(backend))
    env = service_env(url, f"/tmp/msbench-var-{os.getpid()}-{backend}")
    account = marketsync(env, "admin", "account", "create", "--name", "bench")
    credential = marketsync(
        env, "admin", "credential", "create", "--account", str(account["AccountId"]), "--name", "bench",
        "--scopes", "MarketplacesRead",
    )  # fmt: skip
    for platform, country in (("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR")):
        marketsync(env, "admin", "marketplace", "connect", "--account", str(account["AccountId"]),
                   "--platform", platform, "--country", country)  # fmt: skip
    port, fixed_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    serve = [sys.executable, "-m", "marketsync", "serve", "--no-workers", "--port", str(port)]
    stack.enter_context(process(serve, env, f"{base}/readyz"))
    fixed = [sys.executable, "-m", "bench.runs.foundation_http", "--serve-fixed-cost", str(fixed_port)]
    stack.enter_context(process(fixed, env, f"http://127.0.0.1:{fixed_port}/readyz"))
    token = httpx.post(
        f"{base}/connect/token",
        data={"grant_type": "client_credentials", "client_id": credential["client_id"],
              "client_secret": credential["client_secret"]},
    ).json()["access_token"]  # fmt: skip
    bearer = {"Authorization": f"Bearer {token}"}
    lua = TOKEN_LUA.format(client_id=credential["client_id"], secret=credential["client_secret"])
    return {
        f"GET authenticated no-op ({backend})": (f"http://127.0.0.1:{fixed_port}{FIXED_COST_PATH}", bearer, None),
        f"GET /api/marketplaces ({backend})": (f"{base}/api/marketplaces", bearer, None),
        f"POST /connect/token ({backend})": (f"{base}/connect/token", {}, lua),
    }


def run(backends: list[str], seconds: int, connections: int, rounds: int) -> dict[str, dict[str, float]]:
    """Every target served at once; rounds of short wrk runs, the floor and ours alternating; medians per target."""
    samples: dict[str, list[dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        bare_port = free_port()
        bare = [sys.executable, "-m", "uvicorn", "bench.floors.bare_app:app", "--port", str(bare_port), "--log-level",
                "warning"]  # fmt: skip
        stack.enter_context(process(bare, dict(os.environ), f"http://127.0.0.1:{bare_port}/"))
        targets: dict[str, tuple[str, dict[str, str], str | None]] = {
            BARE: (f"http://127.0.0.1:{bare_port}/", {}, None)
        }
        for backend in backends:
            targets.update(servers(backend, stack))
        for _ in range(rounds):
            for name, (url, headers, lua) in targets.items():
                result = wrk(url, seconds=seconds, connections=connections, headers=headers, lua=lua)
                samples.setdefault(name, []).append(result)
    return {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]} for name, runs in samples.items()
    }


BARE = "bare FastAPI GET (floor)"
# Issue 15 item 3-4: the fixed cost against the bare floor, and tokens per second.
TARGETS = {"GET authenticated no-op": 0.7, "GET /api/marketplaces": 0.5}


def figures(results: dict[str, dict[str, float]]) -> list[dict[str, object]]:
    bare = results[BARE]["rps"]
    out: list[dict[str, object]] = []
    for name, measured in results.items():
        if name == BARE:
            continue
        operation = name.rsplit(" (", 1)[0]
        if operation in TARGETS:
            ratio = round(measured["rps"] / bare, 2)
            target = f">= {TARGETS[operation]}x of the floor"
            floor: float | None = bare
        else:
            ratio, target, floor = None, ">= 2,000 tokens/s", None
        out.append(
            {"what": name, "ours": round(measured["rps"]), "p99_ms": measured.get("p99_ms"), "floor": floor,
             "ratio": ratio, "target": target, "unit": "req/s", "floor_name": BARE}
        )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3, help="length of one wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over every target, floor and ours alternating")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--serve-fixed-cost", type=int, metavar="PORT", help="serve the no-op route (internal)")
    args = parser.parse_args()
    if args.serve_fixed_cost:
        serve_fixed_cost(args.serve_fixed_cost)
        return
    noise_before = cpu_probe_ms()
    results = run(args.backends.split(","), args.seconds, args.connections, args.rounds)
    noise_after = cpu_probe_ms()
    print(f"load average {os.getloadavg()[0]:.2f}; CPU probe {noise_before} ms before, {noise_after} ms after")
    print(f"{'endpoint (median of rounds)':44} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'x floor':>8}")
    bare = results[BARE]["rps"]
    for name, measured in results.items():
        print(
            f"{name:44} {measured['rps']:8.0f} {measured.get('p50_ms', 0):8.2f} {measured.get('p99_ms', 0):8.2f}"
            f" {measured['non_2xx']:8.0f} {measured['rps'] / bare:8.2f}"
        )
    print_figures(figures(results))


if __name__ == "__main__":
    main()
