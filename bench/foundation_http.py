"""Token endpoint and GET /api/marketplaces throughput (req/s, p50/p99) next to a bare FastAPI GET, same run.

    .venv/bin/python -m bench.foundation_http [--seconds 10] [--connections 32] [--backends sqlite,postgresql]

One uvicorn process per server (`marketsync serve --no-workers`, logs at INFO to /dev/null, as deployed),
wrk with one thread on loopback. "GET authenticated no-op" is the service's app plus one route that only
authenticates (`MarketplacesReader`, `RuntimeDep`) and answers `{}`: the fixed cost every API request pays,
served by the same code (`--serve-fixed-cost PORT`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys

from fastapi import APIRouter, FastAPI
from starlette.responses import Response

from bench.support import free_port, marketsync, process, scratch_database, wrk
from marketsync.app import create_app
from marketsync.auth.dependencies import REQUEST_DEPENDENCIES, MarketplacesReader, RuntimeDep
from marketsync.kit import lean_routes
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
    from marketsync.kit.cli import serve_http

    serve_http(fixed_cost_app, "127.0.0.1", port)


def run(backend: str, seconds: int, connections: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    bare_port = free_port()
    bare = [sys.executable, "-m", "uvicorn", "bench.bare_app:app", "--port", str(bare_port), "--log-level", "warning"]
    with process(bare, dict(os.environ), f"http://127.0.0.1:{bare_port}/"):
        results["bare FastAPI GET"] = wrk(f"http://127.0.0.1:{bare_port}/", seconds=seconds, connections=connections)
    with scratch_database(backend) as url:
        env = service_env(url, f"/tmp/msbench-var-{os.getpid()}")
        account = marketsync(env, "admin", "account", "create", "--name", "bench")
        credential = marketsync(
            env, "admin", "credential", "create", "--account", str(account["AccountId"]), "--name", "bench",
            "--scopes", "MarketplacesRead",
        )  # fmt: skip
        for platform, country in (("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR")):
            marketsync(env, "admin", "marketplace", "connect", "--account", str(account["AccountId"]),
                       "--platform", platform, "--country", country)  # fmt: skip
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve = [sys.executable, "-m", "marketsync", "serve", "--no-workers", "--port", str(port)]
        with process(serve, env, f"{base}/readyz"):
            import httpx

            token = httpx.post(
                f"{base}/connect/token",
                data={"grant_type": "client_credentials", "client_id": credential["client_id"],
                      "client_secret": credential["client_secret"]},
            ).json()["access_token"]  # fmt: skip
        fixed_port = free_port()
        fixed = [sys.executable, "-m", "bench.foundation_http", "--serve-fixed-cost", str(fixed_port)]
        with process(fixed, env, f"http://127.0.0.1:{fixed_port}/readyz"):
            results[f"GET authenticated no-op ({backend})"] = wrk(
                f"http://127.0.0.1:{fixed_port}{FIXED_COST_PATH}", seconds=seconds, connections=connections,
                headers={"Authorization": f"Bearer {token}"},
            )  # fmt: skip
        with process(serve, env, f"{base}/readyz"):
            results[f"GET /api/marketplaces ({backend})"] = wrk(
                f"{base}/api/marketplaces", seconds=seconds, connections=connections,
                headers={"Authorization": f"Bearer {token}"},
            )  # fmt: skip
            lua = TOKEN_LUA.format(client_id=credential["client_id"], secret=credential["client_secret"])
            results[f"POST /connect/token ({backend})"] = wrk(
                f"{base}/connect/token", seconds=seconds, connections=connections, lua=lua
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--serve-fixed-cost", type=int, metavar="PORT", help="serve the no-op route (internal)")
    args = parser.parse_args()
    if args.serve_fixed_cost:
        serve_fixed_cost(args.serve_fixed_cost)
        return
    results: dict[str, dict[str, float]] = {}
    for backend in args.backends.split(","):
        results.update(run(backend, args.seconds, args.connections))
    print(f"{'endpoint':40} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for name, figures in results.items():
        print(
            f"{name:40} {figures['rps']:8.0f} {figures.get('p50_ms', 0):8.2f} {figures.get('p99_ms', 0):8.2f}"
            f" {figures['non_2xx']:8.0f}"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
