"""POST /api/product-types/Search, GET /api/product-types/Schema (InventoryRead) and
POST /api/products/Create (InventoryWrite)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth.dependencies import InventoryReader, InventoryWriter, RuntimeDep
from marketsync.catalog.listings import service as listings
from marketsync.catalog.schemas import (
    CreateProductIn,
    CreateProductOut,
    ProductTypeOut,
    SchemaOut,
    SearchIn,
    SearchOut,
)
from marketsync.catalog.taxonomy import service as taxonomy
from marketsync.http import idempotency
from marketsync.http.bodies import read_body
from marketsync.http.requestid import current_request_id
from marketsync.kit import jsonio
from marketsync.kit.openapi import request_body

router = APIRouter(tags=["Product types"])


@router.post(
    "/api/product-types/Search",
    response_model=SearchOut,
    summary="Search leaf categories",
    openapi_extra=request_body(SearchIn),
)
async def search_product_types(request: Request, caller: InventoryReader, rt: RuntimeDep) -> Response:
    checked = SearchIn.check(await request.body())
    if checked.request is None:
        # An unknown MarketplaceId alone is a 404; beside a shape error, the 400 names it too (decision 0344).
        marketplace_id = checked.fields.get("MarketplaceId")
        checked.refuse(
            await rt.db.driver_read(
                lambda reader: taxonomy.unknown_marketplace(reader, caller.account_id, marketplace_id)
            )
        )
    body = checked.valid()
    limit = body.Limit if body.Limit is not None else taxonomy.SEARCH_DEFAULT_LIMIT
    rows, total = await rt.db.driver_read(
        lambda reader: taxonomy.search(
            reader, caller.account_id, body.MarketplaceId, body.SearchText, limit, body.Offset or 0
        )
    )
    found = SearchOut(
        ProductTypes=[ProductTypeOut(CategoryId=r.category_id, Title=r.name, Path=r.path) for r in rows],
        TotalCount=total,
    )
    return Response(jsonio.dumps(found.model_dump()), media_type="application/json")


@router.get("/api/product-types/Schema", response_model=SchemaOut, summary="Attribute schema of a leaf category")
async def product_type_schema(
    caller: InventoryReader,
    rt: RuntimeDep,
    marketplaceId: Annotated[str, Query(min_length=1)],
    categoryId: Annotated[str, Query(min_length=1)],
) -> SchemaOut:
    # Amazon's schemas are its own: asked for now (cached a while), stored as the category's view when they changed.
    await taxonomy.refresh_marketplace_schema(rt, caller.account_id, marketplaceId, categoryId)
    async with rt.db.read() as session:
        schema = await taxonomy.get_schema(session, caller.account_id, marketplaceId, categoryId)
    return SchemaOut.of(schema.view, schema.attributes)


@router.post(
    "/api/products/Create",
    response_model=CreateProductOut,
    summary="Create or update a product and queue its publish",
    openapi_extra=request_body(CreateProductIn),
)
async def create_product(request: Request, caller: InventoryWriter, rt: RuntimeDep) -> Response:
    # Checked field by field by catalog.listings.rules (types and schema errors in one 400), so read as plain JSON.
    raw = read_body(await request.body())
    marketplace_id, category_id = raw.get("MarketplaceId"), raw.get("CategoryId")
    if isinstance(marketplace_id, str) and isinstance(category_id, str) and marketplace_id and category_id.strip():
        # Validated against the marketplace's current schema where the schemas are its own (Amazon).
        await taxonomy.refresh_marketplace_schema(rt, caller.account_id, marketplace_id, category_id)
    if raw.get("ValidateOnly") is True:
        # Writes nothing, so it needs neither a write transaction nor the Idempotency-Key record.
        async with rt.db.read() as session:
            outcome = await listings.create_product(rt, session, caller.account_id, raw)
        return Response(_create_body(outcome), media_type="application/json")

    validated: list[listings.CreatePlan] = []
    key_problems = idempotency.key_problems(request)  # a bad Idempotency-Key is named with the body's problems

    async def validate() -> None:
        # Read-only on the raw driver, before the write transaction: on SQLite the one writer is not held meanwhile.
        validated.append(
            await rt.db.driver_read(
                lambda reader: listings.validate_create_on_driver(reader, caller.account_id, raw, key_problems)
            )
        )

    async def work(session: AsyncSession) -> idempotency.Outcome:
        outcome = await listings.create_product(rt, session, caller.account_id, raw, validated[0])
        return idempotency.Outcome(200, _create_body(outcome))

    return await idempotency.run(rt, request, caller.account_id, "products.create", work, prepare=validate)


def _create_body(outcome: listings.CreateOutcome) -> bytes:
    return jsonio.dumps(
        CreateProductOut(
            RequestId=current_request_id(),
            ProductId=outcome.product_id,
            Sku=outcome.sku,
            ListingAction=outcome.listing_action,
            ExistingListingId=outcome.existing_listing_id,
            JobId=outcome.job_id,
            Warnings=outcome.warnings,
        ).model_dump()
    )
