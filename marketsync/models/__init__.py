"""All tables. Import order only matters for Alembic autogenerate seeing every model."""

# Domain table modules: importing them registers their tables on Base.metadata.
from marketsync.models import activity as _activity  # noqa: F401
from marketsync.models import catalog as _catalog  # noqa: F401
from marketsync.models import orders as _orders  # noqa: F401
from marketsync.models import people as _people  # noqa: F401
from marketsync.models import sandbox as _sandbox  # noqa: F401
from marketsync.models import webhooks as _webhooks  # noqa: F401
from marketsync.models.accounts import Account, Credential
from marketsync.models.base import Base
from marketsync.models.events import Event
from marketsync.models.idempotency import IdempotencyRecord
from marketsync.models.inventory import Listing, Product
from marketsync.models.jobs import Job, JobProductAddition, Schedule
from marketsync.models.keys import KeyFingerprint
from marketsync.models.marketplaces import MarketplaceConnection

__all__ = [
    "Account",
    "Base",
    "Credential",
    "Event",
    "IdempotencyRecord",
    "Job",
    "JobProductAddition",
    "KeyFingerprint",
    "Listing",
    "MarketplaceConnection",
    "Product",
    "Schedule",
]
