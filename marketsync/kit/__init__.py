"""Domain-free helpers."""
