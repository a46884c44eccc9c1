"""Orders: the order record, list/read, confirm/cancel/refund/update, write-back to P1."""
