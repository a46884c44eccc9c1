"""Task handlers, periodic schedules and pollers, registered by each domain's tasks module."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from marketsync.config import Settings

if TYPE_CHECKING:
    from marketsync.jobs.run import JobRun
    from marketsync.runtime import Runtime

TaskHandler = Callable[["Runtime", "JobRun"], Awaitable[object]]
ScheduleFn = Callable[["Runtime"], Awaitable[None]]
H = TypeVar("H", bound=TaskHandler)
PollerFn = Callable[["Runtime", str], Awaitable[int]]


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    interval_s: Callable[[Settings], float]
    fn: ScheduleFn


TASKS: dict[str, TaskHandler] = {}
SCHEDULES: dict[str, ScheduleSpec] = {}
POLLERS: dict[str, PollerFn] = {}

# Each domain registers its handlers in `<domain>.tasks` at import time.
DOMAIN_TASK_MODULES = (
    "marketsync.auth.tasks",
    "marketsync.jobs.tasks",
    "marketsync.inventory.tasks",
    "marketsync.marketplaces.tasks",
    "marketsync.orders.tasks",
    "marketsync.catalog.tasks",
    "marketsync.webhooks.tasks",
    "marketsync.people.tasks",
)


def task(job_type: str) -> Callable[[H], H]:
    def register(fn: H) -> H:
        TASKS[job_type] = fn
        return fn

    return register


def schedule(name: str, interval_s: Callable[[Settings], float]) -> Callable[[ScheduleFn], ScheduleFn]:
    def register(fn: ScheduleFn) -> ScheduleFn:
        SCHEDULES[name] = ScheduleSpec(name, interval_s, fn)
        return fn

    return register


def poller(name: str) -> Callable[[PollerFn], PollerFn]:
    """A function every worker calls each cycle (e.g. webhook delivery); returns how much it did."""

    def register(fn: PollerFn) -> PollerFn:
        POLLERS[name] = fn
        return fn

    return register


def load_all(settings: Settings) -> None:
    for module in DOMAIN_TASK_MODULES:
        importlib.import_module(module)
    for module in (m.strip() for m in settings.task_modules.split(",")):
        if module:
            importlib.import_module(module)
