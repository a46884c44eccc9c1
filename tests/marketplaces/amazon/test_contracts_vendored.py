"""Amazon's contracts ship unchanged: each vendored file's sha256 is the one of Amazon's published file (the copy in
the project's shared contracts, taken at amzn/selling-partner-api-models commit 34dc93fe), and they are package data."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path, PurePosixPath

from marketsync.marketplaces.amazon.contracts import validation

CONTRACTS = validation.CONTRACTS_DIR
PACKAGE = Path(validation.__file__).parents[3]  # marketsync/

VENDORED = {
    "LICENSE": "09e8a9bcec8067104652c168685ab0931e7868f9c8284b66f5ae6edae5f1130b",
    "NOTICE": "d4290ed64c2edd0fce1d84e3f9dfb2881240fe534def76b8cd29ed6af683e287",
    "README.md": "b2eb6e214c39d4533f6f9a04acc71b5940ee37c6dc4ff233437ed71302b69a8c",
    "models/definitionsProductTypes_2020-09-01.json": (
        "9f54478fd9c145be65fd5b266d13770e4eb41f3d19f1ade5342ce64786af0aaa"
    ),
    "models/feeds_2021-06-30.json": "ab235b4a0e5ce21083b885dd4f2b8cae7a6f597d7adf2647b47b90d6f5098a16",
    "models/listingsItems_2021-08-01.json": "ddba7322661a227b6148dabadaf93da15dde6dfe0eb828c04e9f8b653b8d2557",
    "models/ordersV0.json": "027ac6f5c97126647c6925db9be09f78c7c741cd1d8727a5367374a1846bedc5",
    "models/orders_2026-01-01.json": "4bd47126b466b94ccb04d822e3b94edee1fa7977a8b376a8c329852ef61be431",
    "models/reports_2021-06-30.json": "d72db9e5280262a92933a0e45e2207c150272f1d66177b2517c20671d69c732c",
    "models/sellers.json": "497862ea32de8040453649986e2cd7c6fcc15b55e8022becc783e4a6d6ffcffd",
    "models/tokens_2021-03-01.json": "3cd09ae7f218c83f32536a894cb8c42f2191c94b9c27f6bcf0a164442089b061",
    "schemas/listings-feed-message-schema-v2.json": "352ede68b5f16aba7946edc11e5ec7f02b84c9700cf40945fe6ed895b2d523f2",
    "schemas/listings-feed-processing-report-schema-v2.example.json": (
        "035a5a0c88c8b5b627060c9542961718b8fdc619872b134a58428a1ec5d84686"
    ),
    "schemas/listings-feed-processing-report-schema-v2.json": (
        "03daac9d3fa97d729efb3f3c2836c664036a8ef32a9829363d8026bb097178fd"
    ),
    "schemas/listings-feed-schema-v2.example.json": "2292b618715a5b3ad229fc30f1a52a7ad649dad56a97413253171b32c96f3a0b",
    "schemas/listings-feed-schema-v2.json": "9f6c00a109f086c269427ae1bc4afe1f9ba49ff8df46de9de939fa2c9f00e1ef",
}


def _vendored_files() -> set[str]:
    return {
        path.relative_to(CONTRACTS).as_posix()
        for path in CONTRACTS.rglob("*")
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts
    }


def test_every_vendored_file_is_amazons_byte_for_byte() -> None:
    assert _vendored_files() == set(VENDORED), "a contract file was added or removed: record its published sha256"
    for name, digest in VENDORED.items():
        assert hashlib.sha256((CONTRACTS / name).read_bytes()).hexdigest() == digest, f"{name} differs from Amazon's"


def test_the_contracts_ship_as_package_data() -> None:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["marketsync"]
    for name in VENDORED:
        relative = PurePosixPath((CONTRACTS / name).relative_to(PACKAGE).as_posix())
        assert any(relative.match(pattern) for pattern in patterns), f"{relative} is not package data"
