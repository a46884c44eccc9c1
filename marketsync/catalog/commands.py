"""admin taxonomy import|export: load a marketplace kind's taxonomy (generated or from a FILE) into its sites.

A taxonomy is kept per site, a kind in one country (P1 UK, P1 DE): `--country` names the site; without it the
taxonomy goes to every site of the kind the service knows (connected in any account, or already loaded), or to the
kind's home site when none is known yet (docs/decisions/0221-taxonomies-per-site.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from marketsync.catalog import taxonomy
from marketsync.catalog.taxonomy import service
from marketsync.http.errors import ValidationFailed
from marketsync.kinds import home_site
from marketsync.kit.cli import JsonOption, emit, taxonomy_app
from marketsync.marketplaces.registry import shipped_taxonomy
from marketsync.marketplaces.service import checked_site
from marketsync.runtime import Runtime
from marketsync.startup import run_command

PlatformOption = typer.Option(..., "--platform", help="Marketplace kind: P1, P2, P3 or P4.")
RevisionOption = typer.Option(
    1, "--revision", min=1, help="Revision of the shipped taxonomy; a higher one changes some schemas."
)
SizeOption = typer.Option(None, "--size", min=50, help="About this many categories (default: the kind's own size).")
CountryOption = typer.Option(
    None,
    "--country",
    help="The site's country, e.g. UK. Default: every site of the kind that is connected or loaded (else its home).",
)


def build_taxonomy(platform: str, file: Path | None, revision: int, size: int | None) -> taxonomy.Taxonomy:
    platform = platform.strip().upper()
    if platform not in taxonomy.PLATFORMS:
        raise ValidationFailed(errors={"Platform": [f"One of {', '.join(taxonomy.PLATFORMS)}."]})
    if file is None:
        shipped = shipped_taxonomy(platform, revision, size)  # the tree the kind's marketplace ships (the sandbox's)
        if shipped is None:
            raise ValidationFailed(errors={"FILE": [f"{platform} ships no taxonomy of its own: give a taxonomy file."]})
        return shipped
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
    country: str | None = CountryOption,
    revision: int = RevisionOption,
    size: int | None = SizeOption,
    as_json: bool = JsonOption,
) -> None:
    """Load or re-import a marketplace kind's taxonomy into its sites (or the one named by --country). Every
    import is a new version: every schema of the site gets a new ProductTypeViewId (the old ids are then refused
    by product create), and those whose content changed a new SchemaVersion. --json: {"Platform", "Sites":
    [{"Country", "Sequence", "Added", "Changed", "Removed", "Unchanged", ...}]}; Unchanged: same content as the
    previous version."""

    async def body(rt: Runtime) -> dict[str, Any]:
        loaded = build_taxonomy(platform, file, revision, size)
        countries = [checked_site(loaded.platform, country)[1]] if country is not None else []
        if not countries:
            async with rt.db.read() as session:
                countries = await service.taxonomy_countries(session, loaded.platform)
            countries = countries or [home_site(loaded.platform)]
        console = Console(stderr=True)
        sites: list[dict[str, Any]] = []
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=as_json,
        ) as bar:
            for site in countries:
                task = bar.add_task(f"{loaded.platform} {site} taxonomy: importing", total=None)

                def progress(done: int, total: int, task: TaskID = task) -> None:
                    bar.update(task, completed=done, total=total)

                async with rt.db.transaction() as session:
                    summary = await service.import_taxonomy(rt, session, loaded, site, progress)
                sites.append(summary.to_json())
        return {"Platform": loaded.platform, "Sites": sites}

    result = run_command(body, as_json=as_json)
    lines = []
    for site in result["Sites"]:
        name = f"{site['Platform']} {site['Country']}"
        lines.append(
            f"{name}: version {site['Sequence']} imported, content unchanged: every schema has a new ProductTypeViewId"
            if site["Unchanged"]
            else f"{name}: version {site['Sequence']} imported: {site['Categories']} categories, "
            f"{site['Leaves']} leaves; {site['Added']} schemas added, {site['Changed']} changed, "
            f"{site['Removed']} removed (every schema has a new ProductTypeViewId)"
        )
    emit(result, as_json, "\n".join(lines))


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
