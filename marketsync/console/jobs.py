"""Jobs in the app: the account's jobs newest first (filtered by status and type, a page at a time), a find-by-JobId
box, and one job's page with its state, progress, result and failure reason, which the API never shows (spec
section 2, Job; docs/decisions/0311-job-page.md)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn, checked_form
from marketsync.console.render import errors_of, is_partial, page, page_router, see_other, table_of
from marketsync.http.errors import ApiError, NotFound
from marketsync.jobs import service as jobs
from marketsync.jobs.types import JobStatus, JobType
from marketsync.kinds import marketplace_name
from marketsync.marketplaces import service as marketplaces
from marketsync.people.service import Person

router = page_router()
JOBS_PAGE = 50
JOBS_MAX_OFFSET = 1_000_000  # decision 0314's bound
SORTS = {"created": True, "type": False, "status": False}  # column -> first sorted descending
STATUSES = [status.value for status in JobStatus]
TYPES = [job_type.value for job_type in JobType]


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(
    request: Request,
    person: SignedIn,
    find: str | None = None,
    status: str = "",
    job_type: Annotated[str, Query(alias="type")] = "",
) -> Response:
    errors: dict[str, list[str]] = {}
    if find is not None:  # the find-by-JobId box (a GET form): the job's own page, or the app's 404 there
        job_id = find.strip()
        if job_id:
            return see_other(f"/app/jobs/{quote(job_id, safe='')}")
        errors["JobId"] = ["Give a JobId, as an API response or a webhook carries it."]
    # The filters: recurring work (a listing mirror, an order pull every few minutes) would otherwise bury the one
    # failed job a person looks for under the latest 50 (docs/decisions/0331-job-list-filters.md).
    if status and status not in STATUSES:
        errors["Status"] = [f"One of {', '.join(STATUSES)}."]
    if job_type and job_type not in TYPES:
        errors["Type"] = [f"One of {', '.join(TYPES)}."]
    filters = [(name, value) for name, value in (("status", status), ("type", job_type)) if value]
    table, table_errors = table_of(
        request, "/app/jobs", SORTS, "created", page_size=JOBS_PAGE, max_offset=JOBS_MAX_OFFSET, filters=filters
    )
    errors |= table_errors
    listed: list[Any] = []
    if not errors or set(errors) == {"JobId"}:
        async with runtime_of(request).db.read() as session:
            listed, total = await jobs.job_table(
                session, person.account_id, status=status or None, job_type=job_type or None, sort=table.sort,
                descending=table.descending, limit=JOBS_PAGE, offset=table.offset,
            )  # fmt: skip
        table = table.counted(total, len(listed))
    return page(
        request, "jobs.html", person, 400 if errors else 200, title="Jobs", jobs=listed, errors=errors,
        status_filter=status, type_filter=job_type, statuses=STATUSES, types=TYPES, table=table,
    )  # fmt: skip


async def _job_page(request: Request, person: Person, job_id: str, status: int = 200, **context: Any) -> Response:
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
    again = job.info.type == JobType.PRICE_STOCK_PUSH and job.info.status in marketplaces.PUSH_AGAIN_STATUSES
    return page(
        request, template, person, status, title=f"Job {job.info.id}", job=job, marketplace=marketplace,
        can_push_again=again, **context,
    )  # fmt: skip


# `path`: an id holding a slash (the find box sends it as one segment, %2F, which the server decodes) reaches this
# page and is answered "No job with this id.", not the app's generic "No such page.".
@router.get("/jobs/{job_id:path}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: str, person: SignedIn, again: str = "") -> Response:
    if not job_id:
        return see_other("/app/jobs")
    return await _job_page(request, person, job_id, pushed_again_from=again if again.isalnum() else "")


@router.post("/jobs/{job_id}/push-again", response_class=HTMLResponse)
async def push_again(request: Request, job_id: str, person: SignedIn) -> Response:
    """A failed or cancelled price and stock push, sent again with today's values (docs/decisions/0332)."""
    await checked_form(request, person)
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            new_job_id = await marketplaces.push_again(rt, session, person.account_id, job_id)
    except ApiError as exc:
        if exc.status == 404:
            raise
        return await _job_page(request, person, job_id, exc.status, errors=errors_of(exc))
    # Post/redirect/get: reloading the new job's page never pushes a third time.
    return see_other(f"/app/jobs/{new_job_id}?again={job_id}")
