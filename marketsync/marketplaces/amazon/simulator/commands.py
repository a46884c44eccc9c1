"""`marketsync sandbox amazon`: the SP-API and Login with Amazon simulator as its own process (DESIGN.md section 5).
Registered on the `sandbox` group by the composition root (marketsync/cli.py)."""

from __future__ import annotations

import typer


def amazon(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8200, "--port", help="0: an ephemeral port (printed)."),
) -> None:
    """Serve the Amazon SP-API and Login with Amazon simulator as its own process (state in memory)."""
    from marketsync.marketplaces.amazon.simulator.server import run

    run(host, port)
