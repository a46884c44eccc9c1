"""The long-running processes' heap settings (docs/decisions/0300)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from marketsync.kit.cli import FULL_COLLECTION_EVERY, settle_heap


@pytest.fixture
def restored_collector() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.unfreeze()
    gc.set_threshold(*before)


def test_settled_heap_is_frozen_and_full_collections_are_rare(restored_collector: tuple[int, int, int]) -> None:
    young, middle, _ = restored_collector
    gc.unfreeze()

    settle_heap()

    assert gc.get_freeze_count() > 0  # what was built so far is out of the collector's sight
    assert gc.get_threshold() == (young, middle, FULL_COLLECTION_EVERY)


def test_garbage_made_after_settling_is_still_collected(restored_collector: tuple[int, int, int]) -> None:
    settle_heap()

    class Node:
        partner: object = None

    first, second = Node(), Node()
    first.partner, second.partner = second, first  # a cycle: only the collector frees it
    del first, second

    assert gc.collect() >= 2
