"""Benchmarks that measure one feature end to end (bench/all.py runs them)."""
