"""Marketplace taxonomies, attribute schemas and validated product creation."""
