"""A stateful simulator of Amazon's Selling Partner API and Login with Amazon, held to Amazon's published contracts:
the test double the Amazon connector is tested against, also runnable as its own process (`marketsync sandbox
amazon`). state.py holds the state and the Python API, app.py the HTTP side."""

from marketsync.marketplaces.amazon.simulator.app import create_simulator_app
from marketsync.marketplaces.amazon.simulator.state import AmazonSimulator, Violation

__all__ = ["AmazonSimulator", "Violation", "create_simulator_app"]
