"""admin taxonomy import|export: load a marketplace kind's taxonomy (generated or from a FILE)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from marketsync.catalog import service, taxonomy
from marketsync.errors import ValidationFailed
from marketsync.kit.cli import JsonOption, emit, run_command, taxonomy_app
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime

PlatformOption = typer.Option(..., "--platform", help="Marketplace kind: P1, P2, P3 or P4.")
RevisionOption = typer.Option(
    1, "--revision", min=1, help="Revision of the shipped taxonomy; a higher one changes some schemas."
)
SizeOption = typer.Option(None, "--size", min=50, help="About this many categories (default: the kind's own size).")


def build_taxonomy(platform: str, file: Path | None, revision: int, size: int | None) -> taxonomy.Taxonomy:
    platform = platform.strip().upper()
    if platform not in taxonomy.PLATFORMS:
        raise ValidationFailed(errors={"Platform": [f"One of {', '.join(taxonomy.PLATFORMS)}."]})
    if file is None:
        return shipped.generate(platform, revision, size)  # the sandbox marketplace's own taxonomy
    try:
        loaded = taxonomy.load_file(file)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValidationFailed(errors={"FILE": [f"Not a usable taxonomy file: {exc}"]}) from None
    if loaded.platform != platform:
        raise ValidationFailed(errors={"FILE": [f"The file holds a {loaded.platform} taxonomy, not {platform}."]})
    return loaded


@taxonomy_app.command("import")
def import_taxonomy(
    platform: str = PlatformOption,
    file: Path | None = typer.Argument(None, help="A taxonomy JSON file (see `export`); default: the shipped one."),
    revision: int = RevisionOption,
    size: int | None = SizeOption,
    as_json: bool = JsonOption,
) -> None:
    """Load or re-import a marketplace kind's taxonomy. Schemas whose content changed get a new
    ProductTypeViewId and SchemaVersion; the old view ids are then refused by product create."""

    async def body(rt: Runtime) -> dict[str, object]:
        console = Console(stderr=True)
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=as_json,
        ) as bar:
            task = bar.add_task(f"{platform} taxonomy: preparing", total=None)
            loaded = build_taxonomy(platform, file, revision, size)
            bar.update(task, description=f"{loaded.platform} taxonomy: importing")

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            async with rt.db.transaction() as session:
                summary = await service.import_taxonomy(rt, session, loaded, progress)
        return summary.to_json()

    result = run_command(body, as_json=as_json)
    human = (
        f"{result['Platform']}: taxonomy unchanged (version {result['Sequence']})"
        if result["Unchanged"]
        else f"{result['Platform']}: version {result['Sequence']} imported: {result['Categories']} categories, "
        f"{result['Leaves']} leaves; {result['Added']} schemas added, {result['Changed']} changed, "
        f"{result['Removed']} removed"
    )
    emit(result, as_json, human)


@taxonomy_app.command("export")
def export_taxonomy(
    file: Path = typer.Argument(..., help="Where to write the JSON document."),
    platform: str = PlatformOption,
    revision: int = RevisionOption,
    size: int | None = SizeOption,
    as_json: bool = JsonOption,
) -> None:
    """Write a shipped taxonomy as a JSON file (edit it, then `import` it)."""
    try:
        generated = build_taxonomy(platform, None, revision, size)
    except ValidationFailed as exc:
        typer.echo(f"error: {exc.errors}", err=True)
        raise typer.Exit(1) from None
    taxonomy.dump_file(generated, file)
    emit(
        {
            "Platform": generated.platform,
            "Revision": revision,
            "Categories": len(generated.categories),
            "File": str(file),
        },
        as_json,
    )
