"""Text summary of a py-spy profile in collapsed form (`py-spy record -f raw`): the functions holding the most
samples, inclusive (on the stack) and self (at the top), as shares of all samples.

    .venv/bin/python -m bench.tools.pyspy_summary PROFILE.txt [--top 25] [--under FUNCTION]

`--under` keeps only the stacks that pass through a function (e.g. `push_price_quantity`), so a phase's request
handler can be read apart from the worker's and the server's own work.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

_FRAME = re.compile(r"^(?P<name>.+?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip()
    path = match["file"]
    for marker in ("site-packages/", "marketsync/", "bench/"):
        if marker in path:
            path = (marker if marker != "site-packages/" else "") + path.split(marker, 1)[1]
            break
    return f"{match['name']} ({path})"


def summarise(path: str, top: int, under: str | None) -> str:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    with open(path, encoding="utf-8") as handle:
        lines_in = handle.readlines()
    for line in lines_in:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = [frame_name(frame) for frame in stack.split(";")]
        if under is not None and not any(frame.startswith(under + " ") for frame in frames):
            continue
        count = int(count_text)
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        own[frames[-1]] += count
    lines = [f"{path}: {total} samples" + (f" under {under}" if under else "")]
    lines.append("inclusive:")
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    lines.append("self:")
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--under")
    args = parser.parse_args()
    print(summarise(args.profile, args.top, args.under))


if __name__ == "__main__":
    main()
