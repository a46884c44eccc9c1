"""Jobs in the app: the account's recent jobs, a find-by-JobId box, and one job's page with its state, progress,
result and failure reason, which the API never shows (spec section 2, Job; docs/decisions/0311-job-page.md)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn
from marketsync.console.render import is_partial, page, page_router, see_other
from marketsync.errors import NotFound
from marketsync.jobs import service as jobs
from marketsync.kinds import marketplace_name
from marketsync.marketplaces import service as marketplaces

router = page_router()


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(request: Request, person: SignedIn, find: str | None = None) -> Response:
    if find is not None:  # the find-by-JobId box (a GET form): the job's own page, or the app's 404 there
        job_id = find.strip()
        if job_id:
            return see_other(f"/app/jobs/{quote(job_id, safe='')}")
        errors = {"JobId": ["Give a JobId, as an API response or a webhook carries it."]}
    else:
        errors = {}
    async with runtime_of(request).db.read() as session:
        recent = await jobs.recent_jobs(session, person.account_id)
    return page(request, "jobs.html", person, 400 if errors else 200, title="Jobs", jobs=recent, errors=errors)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: str, person: SignedIn) -> Response:
    async with runtime_of(request).db.read() as session:
        job = await jobs.job_details(session, person.account_id, job_id)  # 404 for an unknown or another's id
        marketplace = None
        if job.marketplace_id:
            try:
                connection = await marketplaces.get(session, person.account_id, job.marketplace_id)
                marketplace = marketplace_name(connection.platform, connection.country)
            except NotFound:
                marketplace = ""  # disconnected since: the job stays as history
    template = "_job.html" if is_partial(request) else "job.html"
    return page(request, template, person, title=f"Job {job.info.id}", job=job, marketplace=marketplace)
