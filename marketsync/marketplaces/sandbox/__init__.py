"""The sandbox marketplaces P1..P4."""
