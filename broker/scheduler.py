"""The broker's background work in one place (Kafka's KafkaScheduler): each periodic task
by name with its period, and the tasks that wait for work of their own (the marker writer,
the flusher). The broker lists them (Broker.background_tasks); `run` starts them all.
"""
from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

import trio

log = logging.getLogger("minikafka.broker")


@dataclass(frozen=True)
class Periodic:
    """``run`` (a function or an async function) every ``period_ms``, first after
    ``first_delay_ms`` (default: one period). As in Kafka's scheduler, a period of 0 runs
    it once."""
    name: str
    period_ms: int
    run: Callable[[], object]
    first_delay_ms: int | None = None


@dataclass(frozen=True)
class Service:
    """A task that waits for its own work (an event, a queue) and runs until shutdown."""
    name: str
    run: Callable[[], Awaitable[None]]


async def run(tasks: list[Periodic | Service], nursery: trio.Nursery) -> None:
    for task in tasks:
        if isinstance(task, Service):
            nursery.start_soon(task.run, name=task.name)
        else:
            nursery.start_soon(_every, task, name=task.name)


async def _every(task: Periodic) -> None:
    is_async = inspect.iscoroutinefunction(task.run)
    await trio.sleep((task.period_ms if task.first_delay_ms is None else task.first_delay_ms) / 1000)
    while True:
        try:
            if is_async:
                await task.run()
            else:
                task.run()
        except Exception:
            log.exception("background task %s failed", task.name)
        if task.period_ms <= 0:
            return
        await trio.sleep(task.period_ms / 1000)
