"""The deterministic taxonomy generator, the file format and off_api_requirements (no database)."""

from __future__ import annotations

from pathlib import Path

from marketsync.catalog import taxonomy
from marketsync.marketplaces.sandbox import taxonomies as shipped


def test_generation_is_deterministic_and_shaped_as_required() -> None:
    for platform in taxonomy.PLATFORMS:
        generated = shipped.generate(platform)
        assert len(generated.categories) >= 3000
        ids = [c.category_id for c in generated.categories]
        assert len(ids) == len(set(ids)) and all(i.isdigit() for i in ids)
        leaves = generated.leaves
        assert {c.depth for c in leaves} == {3, 4, 5, 6}
        assert all(not c.attributes for c in generated.categories if not c.is_leaf)
        types = {a.type for c in leaves for a in c.attributes}
        assert types == {"Text", "Integer", "Decimal", "Date", "Boolean"}
        assert any(a.allows_custom_values for c in leaves for a in c.attributes)
        assert any(not a.api_settable for c in leaves for a in c.attributes)
        assert any(c.off_api_requirements for c in leaves)
        for leaf in leaves:
            codes = [a.code for a in leaf.attributes]
            assert len(codes) == len(set(codes))
    assert any(int(c.category_id) > 2**53 for c in shipped.generate("P1").categories)
    again = shipped.generate.__wrapped__("P2")  # bypass the cache
    assert [c.content_hash() for c in again.leaves] == [c.content_hash() for c in shipped.generate("P2").leaves]


def test_closed_sets_are_narrowed_per_category() -> None:
    generated = shipped.generate("P1")
    colour_sets = {
        tuple(v.value for v in a.allowed_values) for c in generated.leaves for a in c.attributes if a.code == "Colour"
    }
    assert len(colour_sets) > 10


def test_revisions_change_a_few_schemas_and_keep_ids() -> None:
    one, two = shipped.generate("P3"), shipped.generate("P3", 2)
    assert [c.category_id for c in one.categories] == [c.category_id for c in two.categories]
    pairs = zip(one.leaves, two.leaves, strict=True)
    changed = [a.category_id for a, b in pairs if a.content_hash() != b.content_hash()]
    assert shipped.ANCHOR_IDS["P3"]["T-Shirts"] in changed
    assert shipped.ANCHOR_IDS["P3"]["Smartphones"] not in changed
    assert 0 < len(changed) < len(one.leaves) // 10


def test_off_api_requirements() -> None:
    assert shipped.off_api_requirements("P1", shipped.ANCHOR_IDS["P1"]["T-Shirts"]) == ["Images"]
    assert shipped.off_api_requirements("P1", shipped.ANCHOR_IDS["P1"]["Smartphones"]) == []
    assert shipped.off_api_requirements("P1", None) == []
    assert shipped.off_api_requirements("P1", "not-a-category") == []
    generated = shipped.generate("P4")
    for leaf in generated.leaves[:200]:
        assert shipped.off_api_requirements("P4", leaf.category_id) == list(leaf.off_api_requirements)


def test_file_round_trip(tmp_path: Path) -> None:
    generated = shipped.generate("P2", 1, 300)
    path = tmp_path / "p2.json"
    taxonomy.dump_file(generated, path)
    loaded = taxonomy.load_file(path)
    assert [(c.category_id, c.path, c.is_leaf, c.content_hash()) for c in loaded.categories] == [
        (c.category_id, c.path, c.is_leaf, c.content_hash()) for c in generated.categories
    ]
