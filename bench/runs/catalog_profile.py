"""A steady loop of one catalog hot path, to run under a sampling profiler (docs/perf/catalog-profile.md).

    .venv/bin/py-spy record -r 1000 -f raw -o /tmp/create.txt -- \
        .venv/bin/python -m bench.runs.catalog_profile create [--backend sqlite|postgresql] [--seconds 20]
    .venv/bin/python -m bench.runs.catalog_profile summary /tmp/create.txt

`search` cycles bench.runs.catalog_http's searches, `create` posts its 30-attribute laptop, over HTTP to the app served
in this process (client and server share the loop: filter the summary to the server's frames). `summary` prints the
heaviest functions of a py-spy raw (collapsed) profile's request stacks, by own and inclusive samples. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.runs.catalog_http import LAPTOP_ATTRIBUTES, SEARCHES
from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg
from marketsync import migrate
from marketsync.app import create_app
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog.taxonomy import service
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime
from tests.support.server import serve


async def loop(path: str, backend: str, seconds: float, directory: Path, *, workers: bool) -> None:
    scratch = None
    if backend == "sqlite":
        url = f"sqlite:///{directory / 'profile.db'}"
    else:
        scratch, url = await create_scratch_pg("ms_profile_cat")
    rt = compose_connectors(
        Runtime.create(
            Settings(
                **BENCH_KEYS,
                database_url=url,
                var_dir=directory / "var",
                rate_limit="10000000/minute",
                log_level="WARNING",
            )
        )
    )
    try:
        await migrate.upgrade(rt.db)
        async with rt.db.transaction() as session:
            await service.import_taxonomy(rt, session, shipped.generate("P1", 1, 20_000), "UK")
            account = await auth_service.create_account(rt, session, f"profile-{uuid.uuid4().hex[:8]}")
            credential = await auth_service.create_credential(rt, session, account.id, "profile", list(ALL_SCOPES))
            connection = await marketplaces.connect(rt, session, account.id, "P1", "UK")
        app = create_app(rt, run_workers=workers)
        async with serve(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            form = {
                "grant_type": "client_credentials",
                "client_id": credential.client_id,
                "client_secret": credential.client_secret,
            }
            token = (await client.post("/connect/token", data=form)).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            laptop = shipped.ANCHOR_IDS["P1"]["Laptops"]
            params = {"marketplaceId": connection.id, "categoryId": laptop}
            view = (await client.get("/api/product-types/Schema", params=params, headers=headers)).json()
            deadline = time.monotonic() + seconds
            index = 0
            while time.monotonic() < deadline:
                body: dict[str, Any]
                if path == "search":
                    text = SEARCHES[index % len(SEARCHES)]
                    body = {"MarketplaceId": connection.id, "Limit": 50, "Offset": (index % 3) * 50}
                    if text is not None:
                        body["SearchText"] = text
                    response = await client.post("/api/product-types/Search", json=body, headers=headers)
                else:
                    body = {
                        "Sku": f"LAP-{index:07d}",
                        "MarketplaceId": connection.id,
                        "CategoryId": laptop,
                        "Quantity": 5,
                        "ProductTypeViewId": view["ProductTypeViewId"],
                        "Attributes": LAPTOP_ATTRIBUTES,
                    }
                    response = await client.post("/api/products/Create", json=body, headers=headers)
                assert response.status_code == 200, response.text
                index += 1
            print(f"{index} {path} requests in {seconds} s")
    finally:
        await rt.close()
        if scratch is not None:
            await drop_scratch_pg(scratch)


REQUEST_FRAME = "RequestContextMiddleware.__call__"


def summary(raw: Path, top: int) -> None:
    """Own and inclusive shares of the functions in a py-spy raw profile (lines `frame;frame;... count`), counting only
    the server's request stacks (those through RequestContextMiddleware), from that frame down."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        # A frame reads "function (file:line)"; the function and its file are kept, the line dropped.
        frames = [frame.rsplit(":", 1)[0] + ")" if ":" in frame else frame for frame in stack.split(";")]
        entry = next((i for i, frame in enumerate(frames) if frame.startswith(REQUEST_FRAME)), None)
        if entry is None:
            continue
        frames = frames[entry:]
        count = int(count_text)
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    print(f"{total} samples in request stacks\n\nown time:")
    for frame, count in own.most_common(top):
        print(f"{100 * count / total:5.1f}%  {frame}")
    print("\ninclusive (marketsync frames):")
    ours = [(f, c) for f, c in inclusive.most_common() if "marketsync/" in f]
    for frame, count in ours[:top]:
        print(f"{100 * count / total:5.1f}%  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["search", "create", "summary"])
    parser.add_argument("profile", nargs="?", type=Path, help="summary: the py-spy raw output")
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgresql"])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--workers", action="store_true", help="run the workers in the process, as `serve` does")
    args = parser.parse_args()
    if args.what == "summary":
        summary(args.profile, args.top)
        return
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory(prefix="ms-profile-cat-") as raw:
        asyncio.run(loop(args.what, args.backend, args.seconds, Path(raw), workers=args.workers))


if __name__ == "__main__":
    main()
