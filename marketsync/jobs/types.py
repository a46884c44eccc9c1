"""Job types, job states and one typed payload per job type (spec section 2, Job).

A payload is what the job was asked to do, written once at enqueue; what a run learns and must keep across
retries (a submitted feed's id) is the job's remembered state (`JobRun.remember`), kept beside it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field


class JobType(StrEnum):
    PRICE_STOCK_PUSH = "PriceStockPush"
    ORDER_PULL = "OrderPull"
    LISTING_MIRROR = "ListingMirror"
    LISTING_PUBLISH = "ListingPublish"
    ORDER_WRITE_BACK = "OrderWriteBack"
    INVENTORY_IMPORT = "InventoryImport"
    TAXONOMY_LOAD = "TaxonomyLoad"


class JobStatus(StrEnum):
    NOT_STARTED = "NotStarted"  # held until run_after
    PUBLISHED = "Published"  # queued, may run now
    IN_PROCESS = "InProcess"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


QUEUED = (JobStatus.NOT_STARTED, JobStatus.PUBLISHED)
OPEN = (*QUEUED, JobStatus.IN_PROCESS)
TERMINAL = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)

STATE_KEY = "State"  # where a run's remembered state lives inside the stored payload


PAYLOAD_TYPES: dict[str, type[JobPayload]] = {}


class JobPayload(BaseModel):
    """Base of every job type's payload; field names are the stored JSON's. Each subclass names its job type and
    is found by it (`payload_for`); a plugin's or a test's job type declares its payload the same way."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    job_type: ClassVar[str]

    MarketplaceId: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        job_type = cls.__dict__.get("job_type")
        if job_type is not None:
            if job_type in PAYLOAD_TYPES and PAYLOAD_TYPES[job_type].__qualname__ != cls.__qualname__:
                raise ValueError(f"job type {job_type} already has a payload type")
            PAYLOAD_TYPES[job_type] = cls

    def stored(self) -> dict[str, Any]:
        return self.model_dump(exclude_defaults=True)

    @classmethod
    def of(cls, payload: dict[str, Any]) -> Self:
        """From the stored JSON; keys of other versions (and the remembered state) are not the payload."""
        return cls.model_validate({k: v for k, v in payload.items() if k in cls.model_fields})


class PriceStockPushPayload(JobPayload):
    job_type = JobType.PRICE_STOCK_PUSH
    MarketplaceId: str
    ProductIds: list[str] = Field(default_factory=list)
    AllListings: bool = False  # a full resync (after resume or reauthorisation)


class OrderPullPayload(JobPayload):
    job_type = JobType.ORDER_PULL
    MarketplaceId: str


class ListingMirrorPayload(JobPayload):
    job_type = JobType.LISTING_MIRROR
    MarketplaceId: str


class ListingPublishPayload(JobPayload):
    job_type = JobType.LISTING_PUBLISH
    MarketplaceId: str
    ListingIds: list[str]
    JourneyId: str


class WriteBackLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    Reference: str
    MarketplaceOrderId: str
    MarketplaceItemId: str
    Action: Literal["Confirm", "Cancel", "Refund"]
    Details: dict[str, Any] = Field(default_factory=dict)


class OrderWriteBackPayload(JobPayload):
    job_type = JobType.ORDER_WRITE_BACK
    MarketplaceId: str
    Action: Literal["Confirm", "Cancel", "Refund"]
    Lines: list[WriteBackLine]


class InventoryImportPayload(JobPayload):
    """A price/stock file uploaded in the app; the file and its report live in `inventory_imports`."""

    job_type = JobType.INVENTORY_IMPORT
    ImportId: str


class TaxonomyLoadPayload(JobPayload):
    """The category tree of a newly authorised connection's site, when that site has none yet (decision 0221)."""

    job_type = JobType.TAXONOMY_LOAD
    MarketplaceId: str


def payload_for(job_type: str, data: dict[str, Any] | None = None) -> JobPayload:
    """The typed payload of a job type from its stored (or given) JSON."""
    try:
        payload_type = PAYLOAD_TYPES[job_type]
    except KeyError:
        raise ValueError(f"unknown job type {job_type!r}") from None
    return payload_type.of(data or {})
