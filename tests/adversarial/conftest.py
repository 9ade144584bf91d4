"""Fixtures of the adversarial suite.

* ``bystander``  ``bystander(bootstrap, **kw)`` starts a `Bystander` (a transactional producer and a
                 read_committed consumer on their own topic) on that broker; at the end of the test
                 it is stopped and checked (every committed record read once, in order, no error).
"""
from __future__ import annotations

import pytest

from adversarial.bystander import Bystander


@pytest.fixture
def bystander():
    started: list[Bystander] = []

    def start(bootstrap: str, **kw) -> Bystander:
        b = Bystander(bootstrap, **kw).start()
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()
    for b in started:
        b.check()
