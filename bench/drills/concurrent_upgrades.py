"""Two processes upgrading one fresh SQLite file at the same instant (serve and a worker started together), many
times over: how many rounds had a process fail (docs/decisions/0306-online-migrations.md).

    .venv/bin/python -m bench.drills.concurrent_upgrades [--rounds 40]

Each round makes a new directory and starts two processes; each imports everything, then sleeps until a shared
instant and runs `migrate.upgrade` on the same (not yet existing) file. A round fails when either process exits
non-zero; each distinct exception line is counted. A correctness check, not a performance figure.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Long enough for both processes to have imported the service before the instant comes.
START_DELAY_S = 3.0


async def upgrade_once(url: str, start_at: float) -> None:
    from marketsync import migrate
    from marketsync.db import Database

    db = Database(url)
    try:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        await migrate.upgrade(db)
        assert await migrate.current_revision(db) == migrate.head_revision()
    finally:
        await db.dispose()


def one_round(directory: Path) -> list[str]:
    """The exception line of each failing process (empty: both upgraded)."""
    url = f"sqlite:///{directory / 'fresh.db'}"
    start_at = f"{time.time() + START_DELAY_S:.3f}"
    command = [sys.executable, "-m", "bench.drills.concurrent_upgrades", "--one", url, start_at]
    processes = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = []
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        if process.returncode != 0:
            # The exception's own line, not SQLAlchemy's "Background on this error" link after it.
            lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("(Background", " "))]
            errors.append(lines[-1] if lines else f"exit {process.returncode}")
    return errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--one", nargs=2, metavar=("URL", "START_AT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        asyncio.run(upgrade_once(args.one[0], float(args.one[1])))
        return
    failed_rounds = 0
    reasons: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            directory = Path(scratch) / str(round_number)
            directory.mkdir()
            errors = one_round(directory)
            failed_rounds += bool(errors)
            reasons.update(errors)
    print(f"{failed_rounds} of {args.rounds} rounds had a process fail")
    for reason, count in reasons.most_common():
        print(f"  {count} x {reason}")


if __name__ == "__main__":
    main()
