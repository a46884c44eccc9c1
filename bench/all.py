"""`make bench`: every hot-path figure of issue 15 next to its floor, in one command, written to docs/performance.md.

    .venv/bin/python -m bench.all [--quick] [--only NAME[,NAME...]] [--no-write]

Each benchmark below runs as its own process (both databases, loopback only) and ends with a `FIGURES [...]` line
(bench/support.py print_figures): what was measured, ours, its floor measured in the same run, the ratio and the
target. The CPU probe (a fixed loop) is timed before and after each benchmark, the load average is read after it.
Each benchmark's figures go into docs/perf/bench-figures.json (so `--only` refreshes some and keeps the others), and
docs/performance.md is rewritten from it: medians, p99 where the benchmark has one, ratios, and the noise.
`--quick` runs shorter versions and writes nothing (to check the pipeline, not to quote). The slow steps in OPTIONAL
(growth: 1,000,000 products on the demo's tenant) run only when `--only` names them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.support import REPO, cpu_probe_ms, create_scratch_pg, drop_scratch_pg

# A fresh PostgreSQL database for the run, dropped afterwards.
SCRATCH_PG = "{scratch_pg}"


def _marketplaces_apart(products: str, *options: str) -> list[str]:
    """The propagating push, drained and back to back, the sandbox marketplaces in their own process with their own
    database (`marketsync sandbox serve`)."""
    return ["-m", "bench.runs.inventory_http", "--products", products, "--only", "drained,propagate", *options,
            "--sandbox", "remote"]  # fmt: skip


# name: (full command, quick command; an empty one is skipped). Each prints a FIGURES line last.
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "foundation": (
        ["-m", "bench.runs.foundation_http", "--seconds", "4", "--rounds", "3"],
        ["-m", "bench.runs.foundation_http", "--seconds", "1", "--rounds", "1"],
    ),
    "orders": (
        ["-m", "bench.runs.orders_http", "--orders", "10000,1000000", "--pages", "150"],
        ["-m", "bench.runs.orders_http", "--orders", "20000", "--pages", "20"],
    ),
    # The app's tables (issue 41, decision 0436): orders, catalogue and jobs pages with a million orders.
    "orders-page": (
        ["-m", "bench.runs.orders_page", "--orders", "1000000", "--products", "100000", "--runs", "30"],
        ["-m", "bench.runs.orders_page", "--orders", "5000", "--products", "1000", "--jobs", "1000", "--runs", "3"],
    ),
    # The push, the products walk, Offset pages and GET (items 1, 2).
    "inventory": (
        [
            "-m",
            "bench.runs.inventory_http",
            "--products",
            "100000",
            "--pushes",
            "40",
            "--pages",
            "150",
            "--gets",
            "300",
        ],
        ["-m", "bench.runs.inventory_http", "--products", "10000", "--pushes", "5", "--pages", "10", "--gets", "20"],
    ),
    # Their growth from 10,000 to 1,000,000 products (item 7): both inventories served at once, requests in turn.
    "inventory-growth": (
        [
            "-m",
            "bench.runs.inventory_http",
            "--products",
            "10000,1000000",
            "--only",
            "walk,pages,get,push",
            "--pages",
            "40",
        ],
        [
            "-m",
            "bench.runs.inventory_http",
            "--products",
            "2000,20000",
            "--only",
            "walk,pages,push",
            "--pushes",
            "3",
            "--pages",
            "5",
        ],
    ),
    # The propagating push with the workers in `serve` and the marketplaces elsewhere, as a merchant's are: the
    # service's own work, without the sandbox's feed handling in its process and on its SQLite writer (step
    # inventory measures the demo's deployment, everything in one process).
    "inventory-apart": (_marketplaces_apart("100000"), _marketplaces_apart("2000", "--pushes", "3")),
    # The same in the scale-out deployment: `serve --no-workers` beside a `marketsync worker` process.
    "inventory-worker": (
        _marketplaces_apart("100000", "--worker-process"),
        _marketplaces_apart("2000", "--pushes", "3", "--worker-process"),
    ),
    # Issue 42: the hot paths on the tenant `marketsync demo` makes (marketplaces, listings, schedules running), every
    # floor in the same run with `serve` paused while it is timed.
    "demo-tenant": (
        ["-m", "bench.runs.demo_tenant", "--pushes", "60", "--reads", "40"],
        ["-m", "bench.runs.demo_tenant", "--pushes", "5", "--reads", "8", "--fresh"],
    ),
    # Its growth from 10,000 to 1,000,000 products beside the demo's (issue 42 item 3): both sizes served at once.
    "growth": (
        [
            "-m",
            "bench.runs.demo_tenant",
            "--extra-products",
            "10000,1000000",
            "--only",
            "push,walk,get,orders,search",
            "--pushes",
            "60",
            "--reads",
            "100",
        ],
        [
            "-m",
            "bench.runs.demo_tenant",
            "--extra-products",
            "2000,20000",
            "--only",
            "push,walk,get,orders,search",
            "--pushes",
            "3",
            "--reads",
            "5",
            "--fresh",
        ],
    ),
    "catalog": (
        ["-m", "bench.runs.catalog_http"],
        ["-m", "bench.runs.catalog_http", "--categories", "2000", "--searches", "30", "--creates", "20"],
    ),
    # Category search on synthetic taxonomies of 10,000 and 1,000,000 categories, and its growth (item 7).
    "catalog-1m": (
        ["-m", "bench.runs.catalog_http", "--search-growth", "10000,1000000", "--searches", "200"],
        ["-m", "bench.runs.catalog_http", "--search-growth", "2000,20000", "--searches", "20"],
    ),
    "feeds": (
        ["-m", "bench.runs.marketplaces_feeds", "--runs", "5"],
        ["-m", "bench.runs.marketplaces_feeds", "--runs", "1"],
    ),
    # A 500-SKU push to Amazon (the SP-API simulator as its own process) next to the same push to the sandbox P2.
    "amazon": (["-m", "bench.runs.amazon_push", "--runs", "5"], ["-m", "bench.runs.amazon_push", "--runs", "1"]),
    "webhooks-sqlite": (
        ["-m", "bench.runs.webhooks_delivery", "--events", "2000"],
        ["-m", "bench.runs.webhooks_delivery", "--events", "200", "--latency-events", "20"],
    ),
    "webhooks-postgresql": (
        ["-m", "bench.runs.webhooks_delivery", "--events", "2000", "--database-url", SCRATCH_PG],
        [
            "-m",
            "bench.runs.webhooks_delivery",
            "--events",
            "200",
            "--latency-events",
            "20",
            "--database-url",
            SCRATCH_PG,
        ],
    ),
    # Memory (issue 15 item 8): two API processes and two workers under ten minutes of mixed load.
    # The app's home page and activity log, 1,000,000 orders and 100,000 products (issue 41: < 300 ms).
    "home-page": (
        ["-m", "bench.runs.home_page", "--runs", "100"],
        ["-m", "bench.runs.home_page", "--orders", "20000", "--products", "5000", "--entries", "3000", "--runs", "5"],
    ),
    "memory": (["-m", "bench.drills.soak", "--seconds", "600"], ["-m", "bench.drills.soak", "--seconds", "60"]),
}
# Slow steps `make bench` runs only when `--only` names them.
OPTIONAL = {"growth"}
OUTPUT = REPO / "docs" / "performance.md"
# Every benchmark's last figures, so that `--only` refreshes some and the page still shows all (with their dates).
LEDGER = REPO / "docs" / "perf" / "bench-figures.json"


def run_one(name: str, arguments: list[str]) -> tuple[list[dict[str, Any]], str]:
    scratch = asyncio.run(create_scratch_pg("ms_bench_all")) if SCRATCH_PG in arguments else None
    command = [sys.executable, *(scratch[1] if scratch and a == SCRATCH_PG else a for a in arguments)]
    started = time.monotonic()
    try:
        completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    finally:
        if scratch is not None:
            asyncio.run(drop_scratch_pg(scratch[0]))
    elapsed = time.monotonic() - started
    figures: list[dict[str, Any]] = []
    for line in completed.stdout.splitlines():
        if line.startswith("FIGURES "):
            figures = json.loads(line.removeprefix("FIGURES "))
    note = f"{name}: {elapsed:.0f} s, exit {completed.returncode}, load average {os.getloadavg()[0]:.2f}"
    if completed.returncode != 0 or not figures:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        note += f" (no figures: {last[:300]})"
    for figure in figures:
        figure["command"] = "python " + " ".join(a if a != SCRATCH_PG else "postgresql://..." for a in arguments)
    return figures, note


def _cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        value = f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    elif isinstance(value, int):
        value = f"{value:,}"
    return f"{value} {unit}".strip()


def render(ledger: dict[str, Any]) -> str:
    figures = [f for name in BENCHMARKS if name in ledger for f in ledger[name]["figures"]]
    notes = [f"{ledger[name]['when']}: {ledger[name]['note']}" for name in BENCHMARKS if name in ledger]
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (`python -m bench.all`); do not edit by hand. Every figure was measured on this",
        "project's 2-core machine, on loopback, over HTTP, next to its **floor measured in the same run**, the floor",
        "and ours alternating. A floor is a minimal end-to-end implementation of the same HTTP operation (bare",
        "Starlette or FastAPI on uvicorn with uvloop and httptools, orjson, the raw driver, a table with only the",
        "columns and the one index the operation needs, answering the same response body). Ratios are the figures to",
        "read; absolute numbers move with the machine's load, shown by the CPU probe (a fixed loop, best of three)",
        "timed before and after.",
        "",
        "The tenant: rows marked **demo tenant** (step demo-tenant, growth) were measured on the tenant `marketsync",
        "demo` makes (four connected marketplaces with listings, its schedules running, Data Flow Merchant for Price",
        "and Stock), `serve` paused while each floor was timed; the others on each step's own bench tenant (an account",
        "with the four marketplaces connected and generated products or orders, nothing else going on).",
        "",
        f"{os.cpu_count()} CPUs. Each step below gives its time, the load average after it and the CPU probe before and"
        " after it.",
        "",
        "| what | ours | p99 ms | floor (same run), or what the target compares with | ratio | target | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for figure in figures:
        unit = figure.get("unit", "")
        floor, reference = figure.get("floor"), figure.get("reference")
        if floor is not None:
            floor_text = f"{_cell(floor, unit)} ({figure.get('floor_name', 'floor')})"
        elif reference is not None:  # a target stated against something else: never shown as a floor
            floor_text = f"not a floor: {_cell(reference, unit)} ({figure.get('reference_name', 'reference')})"
        else:
            floor_text = "—"
        ratio = figure.get("ratio")
        lines.append(
            f"| {figure['what']} | {_cell(figure.get('ours'), unit)} | {_cell(figure.get('p99_ms'))} | {floor_text} |"
            f" {'—' if ratio is None else f'{ratio}x'} | {figure.get('target', '—')} | `{figure['command']}` |"
        )
    lines += growth_table(figures)
    lines += ["", "Steps (`python -m bench.all --only NAME` re-runs one and keeps the others):", ""]
    lines += [*[f"- {note}" for note in notes], ""]
    lines += [
        "Where the time goes, profiles before and after, and the history of earlier figures (some measured against",
        "floors that were not floors, marked superseded there): [docs/perf/](perf/).",
        "",
    ]
    return "\n".join(lines)


def growth_table(figures: list[dict[str, Any]]) -> list[str]:
    """Issue 15 item 7: a series measured at its smallest and largest size (figures with `series` and `rows`), ours
    and its floor: the larger within 1.3x of the smaller."""
    sizes: dict[str, dict[int, dict[str, Any]]] = {}
    for figure in figures:
        if "series" in figure and "rows" in figure:
            sizes.setdefault(figure["series"], {})[figure["rows"]] = figure
    lines = [
        "",
        "Cost growth with the data's size (issue 15 item 7: the larger within 1.3x of the smaller; issue 42 item 3:",
        "ours grows at most 1.15x what the floor grows), ours and the floor (steps inventory-growth and growth: both",
        "sizes served at once, every size's ours and floor in turn, request by request). The goal is read on the",
        "ratio of the medians. The last column (step growth) takes the same ratio round by round, (ours large / ours",
        "small) / (floor large / floor small) of four requests timed one after the other: its median over the rounds",
        "and, in brackets, the middle half, which shows how far single requests scatter around the medians:",
        "",
        "| series | rows | ours | growth | floor | floor's growth | ours' growth / floor's | the same, by round |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for series, by_rows in sizes.items():
        if len(by_rows) < 2:
            continue
        small, large = by_rows[min(by_rows)], by_rows[max(by_rows)]
        unit = small.get("unit", "")
        floors = (small.get("floor"), large.get("floor"))
        floor_growth = f"{floors[1] / floors[0]:.2f}x" if None not in floors else "—"
        relative = f"{large['ours'] / small['ours'] / (floors[1] / floors[0]):.2f}x" if None not in floors else "—"
        ours = f"{_cell(small['ours'], unit)} → {_cell(large['ours'], unit)}"
        floor = f"{_cell(floors[0], unit)} → {_cell(floors[1], unit)}"
        growth = f"{large['ours'] / small['ours']:.2f}x"
        paired = large.get("paired_growth")
        by_round = f"{paired['median']:.2f}x ({paired['q1']:.2f}-{paired['q3']:.2f})" if paired else "—"
        lines.append(
            f"| {series} | {min(by_rows):,} → {max(by_rows):,} | {ours} | {growth} | {floor} | {floor_growth} "
            f"| {relative} | {by_round} |"
        )
    return lines if len(lines) > 10 else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--no-write", action="store_true", help="print the page instead of writing it")
    args = parser.parse_args()
    chosen = [n for n in BENCHMARKS if n in args.only.split(",") or (not args.only and n not in OPTIONAL)]
    kept: dict[str, Any] = json.loads(LEDGER.read_text()) if LEDGER.exists() and not args.quick else {}
    ledger = {name: entry for name, entry in kept.items() if name in BENCHMARKS}  # a retired step's figures go
    for name in chosen:
        full, quick = BENCHMARKS[name]
        arguments = quick if args.quick else full
        if not arguments:
            continue
        before = cpu_probe_ms()
        found, note = run_one(name, arguments)
        note += f", CPU probe {before} → {cpu_probe_ms()} ms"
        print(note, flush=True)
        if not found and name in ledger:
            continue  # a step that failed keeps the figures of its last run that gave some (its note says when)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        ledger[name] = {"figures": found, "note": note, "when": when}
    page = render(ledger)
    if args.no_write or args.quick:
        print(page)
    else:
        LEDGER.write_text(json.dumps(ledger, indent=1, ensure_ascii=False) + "\n")
        OUTPUT.write_text(page)
        print(f"wrote {OUTPUT.relative_to(REPO)} and {LEDGER.relative_to(REPO)}")


if __name__ == "__main__":
    main()
