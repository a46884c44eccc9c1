"""A synthetic P1 taxonomy of any size, for category search at 10,000 and 1,000,000 categories (issue 15 item 7).

The shipped generator (marketsync/marketplaces/sandbox/taxonomies.py) builds schemas for every leaf and stops
growing near 95,000 categories; search needs only the tree. This one uses the same vocabulary (departments,
subcategories, nouns, qualifiers, colours, materials, brands, suffixes), so names and their word frequencies look
like the shipped taxonomy's at every size: departments > subcategories > product groups > leaves, about 24 leaves a
group, leaf names such as "Merino Cardigans Refills" that repeat under different groups as real taxonomies' do.
The four anchor leaves keep their ids (the id search of bench.runs.catalog_http finds one). MARKERS plants rare words
in the same number of leaves at every size (appended to evenly spaced leaves' names, so every other word's matches
stay as they were): searches for them match as many categories at 10,000 as at 1,000,000. Deterministic, about a
second per 200,000 categories.

`categories(n)` yields (category_id, parent_id, name, path, depth, is_leaf) in tree order (the position).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from marketsync.marketplaces.sandbox import taxonomies as shipped

Category = tuple[str, str | None, str, str, int, bool]
LEAVES_PER_GROUP = 24
_SEPARATOR = " > "
_FIRST_ID = 10_000_000
# Marker word -> the number of leaves named with it, at every size (words of no vocabulary: nothing else matches).
MARKERS = {"zephyrine": 20, "quorbalt": 200}


def _group_name(rng: random.Random, noun: str) -> str:
    roll = rng.random()
    if roll < 0.6:
        return f"{rng.choice(shipped.QUALIFIERS)} {noun}"
    return f"{noun} {rng.choice(shipped.SUFFIXES)}"


def _leaf_name(rng: random.Random, noun: str, taken: set[str]) -> str:
    describing = (shipped.QUALIFIERS, shipped.COLOURS, shipped.MATERIALS, shipped.BRANDS)
    for _ in range(20):
        word = rng.choice(rng.choice(describing))
        name = f"{word} {noun}" if rng.random() < 0.5 else f"{word} {noun} {rng.choice(shipped.SUFFIXES)}"
        if name not in taken:
            return name
    return f"{noun} {len(taken) + 1}"


def _marked(name: str, leaf: int, leaves: int) -> str:
    """`name` with the markers whose evenly spaced leaves (every leaves // count-th, from its own offset) include
    the `leaf`-th of `leaves`."""
    for marker, count in MARKERS.items():
        stride = leaves // count
        offset = stride * list(MARKERS).index(marker) // len(MARKERS)
        if leaf % stride == offset and leaf // stride < count:
            name = f"{name} {marker.capitalize()}"
    return name


def categories(size: int) -> Iterator[Category]:
    """About `size` categories (never fewer than the departments, their subcategories and the anchors)."""
    rng = random.Random(f"synthetic-taxonomy:{size}")
    departments = list(shipped.DEPARTMENTS.items())
    subcategories = sum(len(subs) for _, subs in departments)
    groups = max(1, (size - len(departments) - subcategories) // (LEAVES_PER_GROUP + 1))
    leaves = groups * LEAVES_PER_GROUP
    assert leaves >= max(MARKERS.values()), f"{size} categories are too few for the markers"
    leaf = 0
    serial = _FIRST_ID
    anchors = dict(shipped.ANCHOR_IDS["P1"])
    for d_index, (department, subs) in enumerate(departments):
        serial += 1
        department_id = str(serial)
        yield department_id, None, department, department, 1, False
        for s_index, sub in enumerate(subs):
            serial += 1
            sub_id, sub_path = str(serial), f"{department}{_SEPARATOR}{sub}"
            yield sub_id, department_id, sub, sub_path, 2, False
            # The groups spread evenly over the subcategories.
            order = d_index * len(subs) + s_index
            for _ in range(groups * (order + 1) // subcategories - groups * order // subcategories):
                noun = rng.choice(shipped.NOUNS[department])
                serial += 1
                group_id, group = str(serial), _group_name(rng, noun)
                group_path = f"{sub_path}{_SEPARATOR}{group}"
                yield group_id, sub_id, group, group_path, 3, False
                taken: set[str] = set()
                for _ in range(LEAVES_PER_GROUP):
                    name = _leaf_name(rng, noun, taken)
                    taken.add(name)
                    name = _marked(name, leaf, leaves)
                    leaf += 1
                    serial += 1
                    yield str(serial), group_id, name, f"{group_path}{_SEPARATOR}{name}", 4, True
                if anchors:  # one anchor leaf in each of the first groups
                    name, category_id = anchors.popitem()
                    yield category_id, group_id, name, f"{group_path}{_SEPARATOR}{name}", 4, True
