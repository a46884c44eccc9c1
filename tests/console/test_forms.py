"""The app's forms (issue 41 point 7, decision 0433): a marketplace's country is a choice of its kind's sites, the
hand edit's fields hold the current values (one left as it is beside one changed is not sent), destructive buttons
are styled as such. Over real HTTP, on both databases."""

from __future__ import annotations

import re

import httpx

from marketsync.kinds import KINDS
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.support.factories import make_account


async def test_the_country_is_a_choice_of_each_marketplace_kinds_sites(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    page = (await owner.page("/app/marketplaces")).text
    select = page[page.index('<select id="country"') : page.index("</select>", page.index('<select id="country"'))]
    assert 'data-sites-of="platform"' in select
    for platform, kind in KINDS.items():
        group = re.search(rf'<optgroup label="{platform}" data-platform="{platform}">(.*?)</optgroup>', select, re.S)
        assert group is not None, platform
        assert re.findall(r'<option value="([A-Z]+)"', group.group(1)) == list(kind.sites), platform
    refused = await owner.post("/app/marketplaces", {"platform": "P3", "country": "DE"})  # not one of P3's sites
    assert refused.status_code == 400 and "P3 has no DE site; it serves" in refused.text
    await owner.client.aclose()


async def test_the_hand_edit_shows_the_current_values_and_sends_only_what_changed(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    await add_products(rt, account_id, [("MUG-1", "9.5", 4)])
    owner = await signed_in(api, await make_person(rt, account_id))
    page = (await owner.page("/app/product?sku=MUG-1")).text
    assert 'id="price" name="price" inputmode="decimal" value="9.50"' in page
    assert 'id="quantity" name="quantity" inputmode="numeric" value="4"' in page
    assert "placeholder" not in page[page.index('id="price"') : page.index("</form>", page.index('id="price"'))]
    csrf = await owner.csrf()
    edited = await owner.client.post(
        "/app/product", params={"sku": "MUG-1"}, data={"csrf": csrf, "price": "12.00", "quantity": "4"}
    )
    assert edited.status_code == 303 and "sent=price&" in edited.headers["location"]  # the stock as it was: not sent
    unchanged = await owner.client.post(
        "/app/product", params={"sku": "MUG-1"}, data={"csrf": csrf, "price": "12", "quantity": "4"}
    )
    assert (
        "edited=Unchanged" in unchanged.headers["location"] and "sent=price%2Cquantity" in unchanged.headers["location"]
    )
    await owner.client.aclose()


async def test_destructive_buttons_are_styled_as_such(rt: Runtime, api: httpx.AsyncClient) -> None:
    css = (await api.get("/app/static/app.css")).text
    assert 'form[action$="/delete"] button[type=submit]' in css and 'form[action$="/disconnect"]' in css
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    await owner.post("/app/credentials", {"name": "ERP", "scope_OrdersRead": "1"}, csrf_from="/app/credentials")
    page = (await owner.page("/app/credentials")).text
    assert re.search(r'<button type="submit" class="danger" aria-label="Delete ERP">Delete</button>', page)
    await owner.client.aclose()
