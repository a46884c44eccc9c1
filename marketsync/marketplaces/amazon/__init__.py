"""Amazon's Selling Partner API: its published contracts (contracts/), its sites (regions.py), and a stateful
simulator of it (simulator/) that tests, the demo and benchmarks run against."""
