"""Marketplace taxonomies as the catalog uses them: categories, attribute schemas and the JSON file format
(`marketsync admin taxonomy import FILE`). Pure: nothing here does I/O except `load_file`/`dump_file`.

Shape of a taxonomy:
- a tree of categories, depth 3 to 6 for leaves (root departments are depth 1); only leaves carry a schema;
- category ids are strings; P1 and P3 use ids beyond 2**53 (they do not survive a JSON float);
- attributes of the five types (Text, Integer, Decimal, Date, Boolean); closed sets are narrowed per
  category; some attributes accept custom values (AllowedValues are then suggestions); some are managed
  only in the app (ApiSettable false: refused through the API, never shown in the schema);
- requirements the API cannot carry (images, business policies) are kept apart from the attributes.

The taxonomies the sandbox marketplaces ship are generated in marketsync/marketplaces/sandbox/taxonomies.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import orjson

AttributeType = Literal["Text", "Integer", "Decimal", "Date", "Boolean"]
ATTRIBUTE_TYPES: tuple[AttributeType, ...] = ("Text", "Integer", "Decimal", "Date", "Boolean")
PLATFORMS = ("P1", "P2", "P3", "P4")
# Roughly "several thousand" categories per kind, each a little different.
MIN_LEAF_DEPTH, MAX_DEPTH = 3, 6
PATH_SEPARATOR = " > "


@dataclass(frozen=True)
class AllowedValue:
    value: str
    title: str


@dataclass(frozen=True)
class AttributeSpec:
    code: str
    title: str
    type: AttributeType
    is_required: bool = False
    allowed_values: tuple[AllowedValue, ...] = ()
    allows_custom_values: bool = False
    # False: managed only in the merchant's app; refused through the API and left out of the schema.
    api_settable: bool = True

    @property
    def is_closed_set(self) -> bool:
        return bool(self.allowed_values) and not self.allows_custom_values

    def to_json(self) -> dict[str, Any]:
        return {
            "Code": self.code,
            "Title": self.title,
            "Type": self.type,
            "IsRequired": self.is_required,
            "AllowedValues": [{"Value": v.value, "Title": v.title} for v in self.allowed_values],
            "AllowsCustomValues": self.allows_custom_values,
            "ApiSettable": self.api_settable,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttributeSpec:
        kind = data["Type"]
        if kind not in ATTRIBUTE_TYPES:
            raise ValueError(f"attribute {data.get('Code')!r}: unknown Type {kind!r}")
        return cls(
            code=str(data["Code"]),
            title=str(data.get("Title") or data["Code"]),
            type=kind,
            is_required=bool(data.get("IsRequired", False)),
            allowed_values=tuple(
                AllowedValue(str(v["Value"]), str(v.get("Title") or v["Value"])) for v in data.get("AllowedValues", [])
            ),
            allows_custom_values=bool(data.get("AllowsCustomValues", False)),
            api_settable=bool(data.get("ApiSettable", True)),
        )


@dataclass(frozen=True)
class CategorySpec:
    category_id: str
    parent_id: str | None
    name: str
    path: str
    depth: int
    is_leaf: bool
    department: str
    product_type_code: str | None = None
    attributes: tuple[AttributeSpec, ...] = ()
    off_api_requirements: tuple[str, ...] = ()

    def schema_document(self) -> dict[str, Any]:
        """Everything a leaf's schema is made of; its hash decides whether a re-import changed it."""
        return {
            "Path": self.path,
            "ProductTypeCode": self.product_type_code,
            "Attributes": [a.to_json() for a in self.attributes],
            "OffApiRequirements": list(self.off_api_requirements),
        }

    def content_hash(self) -> str:
        return self._content_hash

    @cached_property
    def _content_hash(self) -> str:
        return hashlib.sha256(orjson.dumps(self.schema_document(), option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class Taxonomy:
    platform: str
    revision: int
    categories: tuple[CategorySpec, ...]
    source: str = "generated"
    _by_id: dict[str, CategorySpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({c.category_id: c for c in self.categories})

    def get(self, category_id: str) -> CategorySpec | None:
        return self._by_id.get(category_id)

    @property
    def leaves(self) -> list[CategorySpec]:
        return [c for c in self.categories if c.is_leaf]


# --------------------------------------------------------------------------------------------------
# File format (JSON): what `marketsync admin taxonomy import FILE` reads and `export` writes.


def to_document(taxonomy: Taxonomy) -> dict[str, Any]:
    return {
        "Platform": taxonomy.platform,
        "Revision": taxonomy.revision,
        "Categories": [
            {
                "CategoryId": c.category_id,
                "ParentId": c.parent_id,
                "Name": c.name,
                **(
                    {
                        "ProductTypeCode": c.product_type_code,
                        "Attributes": [a.to_json() for a in c.attributes],
                        "OffApiRequirements": list(c.off_api_requirements),
                    }
                    if c.is_leaf
                    else {}
                ),
            }
            for c in taxonomy.categories
        ],
    }


def from_document(document: dict[str, Any], source: str = "file") -> Taxonomy:
    """Parse and check a taxonomy document: parents exist, no cycles, leaves at depth 3 to 6."""
    platform = str(document.get("Platform", ""))
    if platform not in PLATFORMS:
        raise ValueError(f"Platform must be one of {', '.join(PLATFORMS)}")
    raw = document.get("Categories")
    if not isinstance(raw, list) or not raw:
        raise ValueError("Categories must be a non-empty array")
    rows: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for item in raw:
        category_id = str(item["CategoryId"])
        if category_id in rows:
            raise ValueError(f"duplicate CategoryId {category_id}")
        rows[category_id] = item
        order.append(category_id)
    children: dict[str | None, list[str]] = {}
    for category_id in order:
        parent = rows[category_id].get("ParentId")
        parent_id = None if parent is None else str(parent)
        if parent_id is not None and parent_id not in rows:
            raise ValueError(f"category {category_id}: unknown ParentId {parent_id}")
        children.setdefault(parent_id, []).append(category_id)
    categories: list[CategorySpec] = []

    def visit(category_id: str, parent: CategorySpec | None, department: str) -> None:
        item = rows[category_id]
        name = str(item["Name"]).strip()
        if not name:
            raise ValueError(f"category {category_id}: empty Name")
        depth = 1 if parent is None else parent.depth + 1
        if depth > MAX_DEPTH:
            raise ValueError(f"category {category_id}: deeper than {MAX_DEPTH}")
        is_leaf = category_id not in children
        if is_leaf and depth < MIN_LEAF_DEPTH:
            raise ValueError(f"leaf category {category_id} at depth {depth}; leaves sit at depth 3 to 6")
        attributes = tuple(AttributeSpec.from_json(a) for a in item.get("Attributes", [])) if is_leaf else ()
        codes = [a.code for a in attributes]
        if len(set(codes)) != len(codes):
            raise ValueError(f"category {category_id}: duplicate attribute codes")
        spec = CategorySpec(
            category_id=category_id,
            parent_id=parent.category_id if parent else None,
            name=name,
            path=name if parent is None else f"{parent.path}{PATH_SEPARATOR}{name}",
            depth=depth,
            is_leaf=is_leaf,
            department=department or name,
            product_type_code=str(item.get("ProductTypeCode") or category_id) if is_leaf else None,
            attributes=attributes,
            off_api_requirements=tuple(str(r) for r in item.get("OffApiRequirements", [])) if is_leaf else (),
        )
        categories.append(spec)
        for child in children.get(category_id, []):
            visit(child, spec, department or name)

    for root in children.get(None, []):
        visit(root, None, "")
    if len(categories) != len(rows):
        raise ValueError("the category graph has a cycle")
    return Taxonomy(platform, int(document.get("Revision", 1)), tuple(categories), source=source)


def load_file(path: Path) -> Taxonomy:
    return from_document(orjson.loads(path.read_bytes()), source=f"file:{path.name}")


def dump_file(taxonomy: Taxonomy, path: Path) -> None:
    path.write_bytes(orjson.dumps(to_document(taxonomy), option=orjson.OPT_INDENT_2))
