"""After a workload that touches every secret and the customer's data (a credential and its tokens, a webhook secret,
a person's password and session, orders with customer data read through the API and revealed in the app), neither
the database nor the logs hold a secret or a token in clear, and the logs hold no customer data. Customer data lives
only in the order tables (and the sandbox marketplace's own)."""

from __future__ import annotations

import re

import httpx
import pytest

from marketsync.console.guards import SESSION_COOKIE
from marketsync.runtime import Runtime
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.console.support import make_person, signed_in
from tests.orders.support import BUYER_EMAIL, BUYER_NAME, BUYER_PHONE, STREET, ingest, pulled_order, tenant_with
from tests.support.scan import CUSTOMER_TABLES, every_value
from tests.webhooks.support import subscribe


async def test_no_secret_token_or_customer_data_leaks_into_the_database_or_the_logs(
    rt: Runtime, api: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = await tenant_with(rt, api, "P1")
    await ingest(rt, tenant.marketplace("P1"), pulled_order(order_id="MO-SCAN"))
    listed = await api.post("/api/orders/List", json={"IncludeCustomerData": True}, headers=tenant.headers)
    assert BUYER_EMAIL in listed.text  # read through the API with the scope that allows it
    # A global address answers the registration check (as in tests/webhooks); no worker runs: nothing is ever sent.
    rt.extras[RESOLVER_KEY] = StaticResolver({"hooks.example.test": "93.184.215.14"})
    webhook_secret = (await subscribe(api, tenant, "https://hooks.example.test/scan"))["Secret"]
    person = await make_person(rt, tenant.account_id)
    browser = await signed_in(api, person)
    session_token = browser.client.cookies[SESSION_COOKIE]
    order_page = await browser.page("/app/orders")
    order_path = re.search(r'href="(/app/orders/[0-9A-Z]+)"', order_page.text).group(1)  # type: ignore[union-attr]
    revealed = await browser.post(f"{order_path}/reveal", csrf_from=order_path)
    assert BUYER_NAME in revealed.text
    wrong = {"grant_type": "client_credentials", "client_id": tenant.credential.client_id, "client_secret": "wrong"}
    bad = await api.post("/connect/token", data=wrong)
    assert bad.status_code == 401
    await browser.client.aclose()

    secrets = {
        "client secret": tenant.credential.client_secret,
        "access token": tenant.token,
        "webhook secret": webhook_secret,
        "app password": person.password,
        "session token": session_token,
    }
    database = await every_value(rt)
    for table, values in database.items():
        for name, secret in secrets.items():
            assert secret not in values, f"{name} in clear in table {table}"
    holding_customer_data = {table for table, values in database.items() if BUYER_EMAIL in values or STREET in values}
    assert holding_customer_data and holding_customer_data <= CUSTOMER_TABLES, holding_customer_data

    logs = capsys.readouterr().err
    assert '"path":"/api/orders/List"' in logs  # the requests were logged
    for name, secret in secrets.items():
        assert secret not in logs, f"{name} in the logs"
    for datum in (BUYER_NAME, BUYER_EMAIL, BUYER_PHONE, STREET):
        assert datum not in logs, "customer data in the logs"
