"""Amazon's published Selling Partner API contracts, vendored unchanged (see README.md, LICENSE and NOTICE here), and
the validator that holds requests, responses, feed documents and processing reports to them (validation.py)."""

from marketsync.marketplaces.amazon.contracts.validation import (
    ContractViolation,
    feed_document_errors,
    processing_report_errors,
    spapi_contracts,
    validate_feed_document,
    validate_processing_report,
)

__all__ = [
    "ContractViolation",
    "feed_document_errors",
    "processing_report_errors",
    "spapi_contracts",
    "validate_feed_document",
    "validate_processing_report",
]
