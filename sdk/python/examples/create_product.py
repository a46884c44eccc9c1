#!/usr/bin/env python3
"""Create a product on a marketplace, validated against its category's attribute schema, and wait for the
publish job.

    python sdk/python/examples/create_product.py [--sku SKU] [--platform P1] [--category Smartphones]
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from marketsync_client import BadRequest, Client
from marketsync_client.models import Attribute

SAMPLES: dict[str, Any] = {"Text": "Example", "Integer": 1, "Decimal": "1.5", "Date": "2026-01-01", "Boolean": True}


def sample_value(attribute: Attribute) -> Any:
    """A value the schema accepts: its first allowed code for a closed set, else a sample of its type."""
    if attribute.AllowedValues and not attribute.AllowsCustomValues:
        return attribute.AllowedValues[0].Value
    return SAMPLES.get(attribute.Type, "Example")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sku", default=f"SDK-EXAMPLE-{uuid.uuid4().hex[:8].upper()}")
    parser.add_argument("--platform", default="P1")
    parser.add_argument("--category", default="Smartphones", help="text to search the category tree for")
    args = parser.parse_args()

    with Client.from_env() as api:
        marketplace = next((mp for mp in api.list_marketplaces() if mp.Platform == args.platform), None)
        if marketplace is None:
            raise SystemExit(f"no active {args.platform} marketplace")
        category = next(iter(api.iter_product_types(marketplace.MarketplaceId, search_text=args.category)), None)
        if category is None:
            raise SystemExit(f"no leaf category matches {args.category!r}")
        print(f"category {category.CategoryId}: {category.Path}")

        # Fetch the schema close to the create: its ProductTypeViewId changes when taxonomies are re-imported.
        schema = api.get_product_type_schema(marketplace.MarketplaceId, category.CategoryId)
        attributes = {a.Code: sample_value(a) for a in schema.Attributes if a.IsRequired}
        print(f"required attributes: {attributes}")

        try:
            created = api.create_product(
                args.sku,
                marketplace.MarketplaceId,
                quantity=3,
                category_id=category.CategoryId,
                product_type_view_id=schema.ProductTypeViewId,
                attributes=attributes,
            )
        except BadRequest as refused:
            # One 400 names every bad field, e.g. "Attributes.Colour".
            for field, messages in refused.errors.items():
                print(f"refused {field}: {' '.join(messages)}")
            raise SystemExit(1) from None
        print(f"{created.Sku}: {created.ListingAction}, publish job {created.JobId}")
        for warning in created.Warnings:
            print(f"  warning: {warning}")  # e.g. images to add in the app before the marketplace accepts it
        if created.JobId:
            job = api.wait_for_job(created.JobId, timeout=120)
            print(f"publish job {job.Status} (successful: {job.IsSuccessful})")


if __name__ == "__main__":
    main()
