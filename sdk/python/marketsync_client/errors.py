"""Exceptions: problem details (RFC 9457) as typed `ApiError`s, token-endpoint errors (RFC 6749 section 5),
and transport failures left after the retries."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = [
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "JobTimeout",
    "MarketsyncError",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TokenError",
    "TransportError",
    "Unauthorized",
    "UnprocessableEntity",
]


class MarketsyncError(Exception):
    """Base of every exception this client raises."""


class ApiError(MarketsyncError):
    """A problem+json answer: ``code`` is stable (e.g. ``validation-failed``), ``errors`` names each bad field
    (``Items[3].Price``, ``Attributes.<code>``), ``request_id`` is what support needs to find the request."""

    def __init__(
        self,
        status: int,
        code: str,
        title: str,
        errors: Mapping[str, list[str]] | None = None,
        request_id: str | None = None,
        *,
        type: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.code = code
        self.title = title
        self.errors: dict[str, list[str]] = {key: list(value) for key, value in (errors or {}).items()}
        self.request_id = request_id
        self.type = type or f"urn:service:error:{code}"
        self.headers: dict[str, str] = dict(headers or {})
        self.body = body
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"{self.status} {self.code}: {self.title}"
        if self.errors:
            text += " " + "; ".join(f"{key}: {' '.join(messages)}" for key, messages in self.errors.items())
        if self.request_id:
            text += f" (request {self.request_id})"
        return text


class BadRequest(ApiError):
    """400: validation failed; ``errors`` names every bad field at once."""


class Unauthorized(ApiError):
    """401: the token was refused even after one renewal (a credential deleted meanwhile is a ``TokenError``)."""


class Forbidden(ApiError):
    """403 ``insufficient-scope``: ask for the scope (Client(scopes=...)) and have it on the credential."""


class NotFound(ApiError):
    """404: unknown id, or one of another account (never told apart)."""


class Conflict(ApiError):
    """409: e.g. SKUs differing only in case (``conflict``), a request with the same key still running
    (``idempotency-in-flight``)."""


class UnprocessableEntity(ApiError):
    """422: e.g. ``idempotency-key-reused`` (the same Idempotency-Key with another body)."""


class RateLimited(ApiError):
    """429 left after the retries; ``retry_after`` is the server's wait in seconds."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.headers.get("retry-after"))


class ServerError(ApiError):
    """5xx left after the retries (503 is retried where safe; other 5xx are not)."""


ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: UnprocessableEntity,
    429: RateLimited,
}


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date (RFC 9110 section 10.2.3); None if unusable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class TokenError(MarketsyncError):
    """The token endpoint refused: ``error`` is RFC 6749's code (``invalid_client``, ``invalid_scope``...)."""

    def __init__(self, status: int, error: str, description: str, *, retry_after: float | None = None) -> None:
        self.status = status
        self.error = error
        self.description = description
        self.retry_after = retry_after
        super().__init__(f"{status} {error}: {description}")


class TransportError(MarketsyncError):
    """No answer (connection refused or reset, timeout) after the retries allowed for this call."""


class JobTimeout(MarketsyncError):
    """`wait_for_job` gave up; ``job`` is the last state seen."""

    def __init__(self, job: Any, waited: float) -> None:
        self.job = job
        self.waited = waited
        super().__init__(f"job {getattr(job, 'JobId', '?')} still {getattr(job, 'Status', '?')} after {waited:.0f} s")
