"""Playwright driving Debian's Chromium (`make browser` installs it; no browser is ever downloaded) against the test's
real server on loopback, and screenshots of each page into docs/app/ when MARKETSYNC_SCREENSHOTS names a folder."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

CHROMIUM = Path("/usr/bin/chromium")
# Headless, no sandbox (root in CI), and nothing that would reach the network: updates, sync, first-run pings.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 667}  # the narrowest phone the app is checked on


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = "Debian's chromium is not installed at /usr/bin/chromium: run `make browser`"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs it through `make test`: a missing browser is a broken build
    pytest.skip(message)


@contextlib.asynccontextmanager
async def browser_page(base_url: str, viewport: dict[str, int] | None = None) -> AsyncIterator[Page]:
    _require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(base_url=base_url, viewport=viewport or DESKTOP)  # type: ignore[arg-type]
            page = await context.new_page()
            page.set_default_timeout(15_000)
            yield page
        finally:
            await browser.close()


async def sign_in(page: Page, email: str, password: str) -> None:
    """With the keyboard only: type, Tab, type, Enter."""
    await page.goto("/app/sign-in")
    await page.locator("#email").fill(email)
    await page.keyboard.press("Tab")
    await page.keyboard.type(password)
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/app/")  # the home page


async def screenshot(page: Page, name: str) -> None:
    """docs/app/<name>.png, taken only when MARKETSYNC_SCREENSHOTS names the folder (once, on SQLite)."""
    folder = os.environ.get("MARKETSYNC_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
