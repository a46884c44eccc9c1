"""Signing a person in to the app over real HTTP, and reading what a page says."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from marketsync.people import service as people
from marketsync.runtime import Runtime

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Browser:
    """One signed-in person's browser: its own cookie jar on the shared server."""

    client: httpx.AsyncClient
    email: str
    password: str

    async def page(self, path: str) -> httpx.Response:
        return await self.client.get(path)

    async def csrf(self, path: str = "/app/marketplaces") -> str:
        return csrf_of(await self.page(path))

    async def post(
        self, path: str, data: dict[str, str] | None = None, *, csrf_from: str = "/app/marketplaces"
    ) -> httpx.Response:
        return await self.client.post(path, data={"csrf": await self.csrf(csrf_from), **(data or {})})


def csrf_of(response: httpx.Response) -> str:
    found = _CSRF.search(response.text)
    assert found is not None, response.text[:500]
    return found.group(1)


async def make_person(rt: Runtime, account_id: str, role: str = "Owner", email: str | None = None) -> people.NewUser:
    async with rt.db.transaction() as session:
        return await people.create_user(
            rt, session, account_id, email or f"{role.lower()}-{account_id}@example.com", role
        )


async def signed_in(api: httpx.AsyncClient, user: people.NewUser) -> Browser:
    client = httpx.AsyncClient(base_url=api.base_url, timeout=30)
    response = await client.post("/app/sign-in", data={"email": user.email, "password": user.password})
    assert response.status_code == 303, response.text
    return Browser(client, user.email, user.password)


def assert_app_page(response: httpx.Response, status: int, *says: str) -> None:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("text/html"), response.headers["content-type"]
    assert response.headers["cache-control"] == "no-store"
    assert "<title>" in response.text and '<main id="main">' in response.text
    for text in says:
        assert text in response.text, (text, response.text[:600])


async def posted_then_reloaded(person: Browser, path: str, data: dict[str, str], page: str) -> tuple[str, str]:
    """The page a form's redirect shows, then that page once more (a reload)."""
    posted = await person.post(path, data, csrf_from=page)
    assert posted.status_code == 303, posted.text[:2000]
    location = posted.headers["location"]
    first = await person.page(location)
    reloaded = await person.page(location)
    assert first.status_code == reloaded.status_code == 200
    return first.text, reloaded.text
