"""What a listing gets in the app beyond the API (docs/decisions/0121-listing-fields-in-the-app.md): images, business
policies and app-managed attributes, and its category with its attribute values
(docs/decisions/0345-p1-category-in-the-app.md), saved and published, or held until the category's every need is met
(decision 0400). The category's values go through the API create's own validation and write (listings/service.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.catalog import repository
from marketsync.catalog.listings import rules
from marketsync.catalog.listings.service import CreatePlan, validate_create, write_create
from marketsync.catalog.taxonomy import AttributeSpec
from marketsync.catalog.taxonomy.service import schema_of
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.jobs import service as jobs
from marketsync.jobs.types import ListingPublishPayload
from marketsync.kinds import ConnectionState, ListingStatus
from marketsync.kit.ids import new_id
from marketsync.marketplaces import service as marketplaces
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime


@dataclass(frozen=True)
class ListingDetails:
    """A listing as the app shows it: what the marketplace requires beyond the API, and what is filled in."""

    listing: Listing
    product: Product
    connection: MarketplaceConnection
    requirements: list[str]  # e.g. ["Images", "BusinessPolicy"]: of the held change's category when one is held
    app_managed: list[AttributeSpec]  # attributes only the app may set (ApiSettable false)

    @property
    def app_fields(self) -> dict[str, Any]:
        return dict(self.listing.app_fields or {})

    @property
    def held(self) -> rules.HeldChange | None:
        return rules.HeldChange.of(self.listing.app_fields)

    @property
    def missing(self) -> list[str]:
        return rules.missing_requirements(self.requirements, self.app_fields)


@dataclass(frozen=True)
class ListingSaved:
    """What a save in the app did: a ListingPublish queued (`job_id`), or the change held (`missing` names what the
    category still needs before the marketplace would take the listing; nothing was sent)."""

    job_id: str | None
    missing: tuple[str, ...] = ()


async def listing_details(session: AsyncSession, account_id: str, listing_id: str) -> ListingDetails:
    found = await repository.listing_with_product(session, account_id, listing_id)
    if found is None:
        raise NotFound("No listing with this id.")
    listing, product = found
    connection = await marketplaces.get(session, account_id, listing.marketplace_id)
    requirements: list[str] = []
    app_managed: list[AttributeSpec] = []
    held = rules.HeldChange.of(listing.app_fields)
    view_id = held.view_id if held is not None else listing.product_type_view_id
    if view_id is not None:
        view = await repository.get_view(session, view_id)
        if view is not None:
            requirements = list(view.off_api_requirements)
            app_managed = [a for a in schema_of(view) if not a.api_settable]
    return ListingDetails(listing, product, connection, requirements, app_managed)


async def set_listing_app_fields(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    listing_id: str,
    *,
    images: list[str],
    policy: dict[str, str],
    attributes: dict[str, str] | None = None,
) -> ListingSaved:
    """Store what the API cannot carry and republish the listing (a ListingPublish job). `attributes` None keeps the
    app-managed attribute values held (the app sets them with the category's other attributes,
    `set_listing_category`). When the listing's category still needs something these fields leave empty, nothing is
    sent: the marketplace would reject it, and a Live listing stays Live as it is (decision 0400)."""
    details = await listing_details(session, account_id, listing_id)
    images, policy = rules.clean_images(images), rules.clean_policy(policy)
    if attributes is not None:
        attributes = {code: value.strip() for code, value in attributes.items() if value.strip()}
    problems = rules.app_field_problems(images, policy, attributes or {}, details.app_managed)
    if problems:
        raise ValidationFailed(errors=problems)
    found = await repository.listing_with_product(session, account_id, listing_id, for_update=True)
    assert found is not None
    listing = found[0]
    if attributes is None:
        attributes = dict((listing.app_fields or {}).get("Attributes") or {})
    listing.app_fields = {
        **(listing.app_fields or {}),
        "Images": images,
        "BusinessPolicy": policy,
        "Attributes": attributes,
    }
    own_requirements: list[str] = []
    if listing.product_type_view_id is not None:
        view = await repository.get_view(session, listing.product_type_view_id)
        own_requirements = list(view.off_api_requirements) if view is not None else []
    missing = rules.missing_requirements(own_requirements, listing.app_fields)
    if missing:
        listing.updated_at = rt.clock.now()
        return ListingSaved(None, tuple(missing))
    return ListingSaved(_republish(rt, session, account_id, listing))


def _republish(rt: Runtime, session: AsyncSession, account_id: str, listing: Listing) -> str:
    """The listing Pending under a new ListingPublish job (its journey); the job's id."""
    now = rt.clock.now()
    job_id = new_id()
    listing.status, listing.journey_id, listing.last_error, listing.updated_at = (
        ListingStatus.PENDING,
        job_id,
        None,
        now,
    )
    payload = ListingPublishPayload(MarketplaceId=listing.marketplace_id, ListingIds=[listing.id], JourneyId=job_id)
    jobs.enqueue(session, now, account_id, payload, job_id=job_id, progress_total=1)
    return job_id


async def listings_needing_attention(session: AsyncSession, account_id: str, at_most: int) -> tuple[int, int]:
    """(Rejected, waiting for their fill-ins: a change held, decision 0400) of the account's listings, each counted
    up to `at_most + 1`."""
    return await repository.listings_needing_attention(session, account_id, at_most)


async def listings_to_fix(
    session: AsyncSession, account_id: str, *, held: bool, limit: int, offset: int
) -> tuple[list[repository.ListingToFix], int]:
    """A page of the account's Rejected listings (or, `held`, those waiting for their fill-ins), and their count."""
    return await repository.listings_to_fix(session, account_id, held=held, limit=limit, offset=offset)


async def product_listings(
    session: AsyncSession, account_id: str, product_id: str
) -> Sequence[tuple[Listing, MarketplaceConnection]]:
    """A product's listings with their connection, for its page in the app (state, last error, a link each)."""
    return await repository.listings_of_product(session, account_id, product_id)


async def set_listing_category(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    listing_id: str,
    *,
    category_id: str,
    view_id: str,
    values: Mapping[str, str],
    images: list[str] | None = None,
    policy: dict[str, str] | None = None,
) -> ListingSaved:
    """Give a listing its category and attribute values (and, with them, its images and policies: one step), then
    republish it.

    This is the API's create of the listing's own SKU on its marketplace with `CategoryId`, `ProductTypeViewId` and
    `Attributes` (no Quantity: stock untouched): the same validation (`validate_create`), the same write and the same
    publish job, in the caller's transaction. What the API refuses because the app manages it (ApiSettable false)
    is checked by the same attribute rules, as settable here, and kept in the listing's app fields. Every problem of
    either part (and of the images and policies) is in one ValidationFailed (keys `CategoryId`, `ProductTypeViewId`,
    `Attributes.<code>`, `Images[i]`, `BusinessPolicy.<kind>`); then nothing is written. Values the listing already
    holds (or a change held) count as present (a partial update); a blank value clears.

    When the category needs what the API cannot carry (images, a business policy) and the listing's app fields do not
    hold it, nothing is published: the marketplace would reject the listing, taking a Live one down. The change is
    held in the listing's app fields, the listing stays as the marketplace has it, and `missing` says what to fill in
    (decision 0400). `images` or `policy` None keeps the ones held.
    """
    listing, product, connection = await _listing_with_connection(session, account_id, listing_id)
    category_id = _chosen_category(listing, category_id)
    values = _over_held_values(listing, category_id, values)
    # The category's app-managed attributes (the current schema's; a stale ProductTypeViewId is refused below).
    app_managed = await _app_managed_attributes(session, connection, category_id)
    payload: dict[str, Any] = {
        "Sku": product.sku,
        "MarketplaceId": connection.id,
        "CategoryId": category_id,
        "Attributes": {code: value for code, value in values.items() if code not in app_managed},
    }
    if view_id.strip():
        payload["ProductTypeViewId"] = view_id.strip()
    errors: rules.Errors = {}
    plan = await _validated_create(session, account_id, connection, payload, errors)
    app_values, app_errors = rules.validate_attributes(
        [replace(a, api_settable=True) for a in app_managed.values()],
        {code: value for code, value in values.items() if code in app_managed},
        dict((listing.app_fields or {}).get("Attributes") or {}),
    )
    _extend(errors, app_errors)
    fields = dict(listing.app_fields or {})
    if images is not None:
        fields["Images"] = rules.clean_images(images)
    if policy is not None:
        fields["BusinessPolicy"] = rules.clean_policy(policy)
    given_images = fields["Images"] if images is not None else []
    given_policy = fields["BusinessPolicy"] if policy is not None else {}
    _extend(errors, rules.app_field_problems(given_images, given_policy, {}, []))
    if errors:
        raise ValidationFailed(errors=errors)
    assert plan is not None and plan.listing is listing and plan.view is not None  # this SKU's listing, a leaf
    fields.pop(rules.HELD, None)
    missing = rules.missing_requirements(plan.view.off_api_requirements, fields)
    if missing:
        # Not sent: the marketplace would reject it. Held, with the images and policies given, until complete.
        change = rules.HeldChange(category_id, plan.view.id, plan.attributes or {}, app_values)
        listing.app_fields = {**fields, rules.HELD: change.to_json()}
        listing.updated_at = rt.clock.now()
        return ListingSaved(None, tuple(missing))
    _, job_id, _ = await write_create(rt, session, account_id, plan)
    listing.app_fields = {**fields, "Attributes": app_values}
    return ListingSaved(job_id)


async def _listing_with_connection(
    session: AsyncSession, account_id: str, listing_id: str
) -> tuple[Listing, Product, MarketplaceConnection]:
    """The listing (locked), its product and its connection; 404 when the account has no such listing."""
    found = await repository.listing_with_product(session, account_id, listing_id, for_update=True)
    if found is None:
        raise NotFound("No listing with this id.")
    listing, product = found
    return listing, product, await marketplaces.get(session, account_id, listing.marketplace_id)


def _chosen_category(listing: Listing, category_id: str) -> str:
    category_id = category_id.strip()
    if not category_id:
        raise ValidationFailed(errors={"CategoryId": ["Choose a category."]})
    if listing.category_id and category_id != listing.category_id:  # a live listing is not moved (decision 0345)
        raise ValidationFailed(errors={"CategoryId": [f"This listing's category is {listing.category_id}; it stays."]})
    return category_id


def _over_held_values(listing: Listing, category_id: str, values: Mapping[str, str]) -> Mapping[str, str]:
    """The change held counts as the values held: a field the form did not send keeps its held value."""
    held = rules.HeldChange.of(listing.app_fields)
    if held is None or held.category_id != category_id:
        return values
    return {
        **{code: rules.form_value(value) for code, value in {**held.attributes, **held.app_attributes}.items()},
        **values,
    }


async def _app_managed_attributes(
    session: AsyncSession, connection: MarketplaceConnection, category_id: str
) -> dict[str, AttributeSpec]:
    category = await repository.get_category(session, connection.platform, connection.country, category_id)
    if category is None or category.view_id is None:
        return {}
    current = await repository.get_view(session, category.view_id)
    return {} if current is None else {a.code: a for a in schema_of(current) if not a.api_settable}


async def _validated_create(
    session: AsyncSession,
    account_id: str,
    connection: MarketplaceConnection,
    payload: dict[str, Any],
    errors: rules.Errors,
) -> CreatePlan | None:
    """The API create's validation of the payload; its problems added to `errors` (None then)."""
    try:
        return await validate_create(repository.SessionCreateReads(session), account_id, payload)
    except ValidationFailed as exc:
        errors.update(exc.errors)
    except NotFound as exc:  # the API's 404 alone: in the app, beside the field it is about
        key = "CategoryId" if connection.state == ConnectionState.ACTIVE else "MarketplaceId"
        rules.add_error(errors, key, exc.title)
    return None


def _extend(errors: rules.Errors, more: Mapping[str, Sequence[str]]) -> None:
    for key, messages in more.items():
        errors.setdefault(key, []).extend(messages)
