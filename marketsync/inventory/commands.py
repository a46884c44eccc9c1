"""Operator commands of the inventory (DESIGN.md §5): Data Flow and the inventory file import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from marketsync.inventory import service
from marketsync.kit.cli import JsonOption, admin, dataflow_app, emit
from marketsync.runtime import Runtime
from marketsync.startup import run_command


@dataflow_app.command("set")
def dataflow_set(
    account: str = typer.Option(..., "--account", help="Account id."),
    kind: str = typer.Option(..., "--kind", help="Price or Stock."),
    owner: str = typer.Option(..., "--owner", help="Merchant (your own system is the source of truth) or Marketplace."),
    as_json: bool = JsonOption,
) -> None:
    """Choose who owns Price or Stock for an account (the app's Data Flow setting)."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            chosen_kind, chosen_owner = await service.set_data_owner(rt, session, account, kind, owner)
        return {"AccountId": account, "Kind": chosen_kind, "Owner": chosen_owner}

    result = run_command(body, as_json=as_json)
    emit(result, as_json, f"Data Flow: {result['Kind']} is now owned by {result['Owner']}.")


@admin.command("import-inventory")
def import_inventory(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True, help="CSV with Sku,Price,Quantity."),
    account: str = typer.Option(..., "--account", help="Account id."),
    propagate: bool = typer.Option(
        True, "--propagate/--no-propagate", help="Schedule the outbound push to marketplaces holding listings."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import prices and stock from a CSV file (channel FileImport). Empty cells leave values alone.

    Rows are applied in batches of 500 (one InventoryChanged event per batch that changed something);
    a bad row is reported with its line number and never stops the rest.
    """
    total = _count_rows(file)
    console = Console(file=sys.stderr)

    async def body(rt: Runtime) -> service.ImportReport:
        with Progress(
            TextColumn("[bold]importing[/bold] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task(file.name, total=total)
            return await service.import_inventory_file(
                rt, account, file, propagate=propagate, on_progress=lambda n: progress.advance(task, n)
            )

    report = run_command(body, as_json=as_json)
    result = {"AccountId": account, "File": str(file), **report.view()}
    if as_json:
        emit(result, True)
        return
    counts = ", ".join(f"{name} {report.counts[name]}" for name in report.counts)
    typer.echo(
        f"{report.rows} rows: {counts}, Invalid {report.invalid}, Superseded {report.superseded}; "
        f"{report.events} InventoryChanged events; {len(report.job_ids)} marketplace push jobs."
    )
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if report.errors:
        typer.echo(f"{len(report.errors)} rows not applied:", err=True)
        for error in report.errors:
            typer.echo(f"  line {error.line} ({error.sku or 'no SKU'}): {error.message}", err=True)


def _count_rows(path: Path) -> int:
    """Data rows for the progress bar's total (lines minus the header; a close estimate is enough)."""
    with path.open("rb") as handle:
        return max(sum(1 for line in handle if line.strip()) - 1, 0)
