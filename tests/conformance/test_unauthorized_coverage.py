"""Every API key the broker serves has a recorded answer to a principal without ACLs: a step of
scenarios/unauthorized.py (run by a broker with Kafka's default strictness, from a connection other
than the admin's) whose golden file Kafka 4.1 wrote. A new API gets its entry in AUTHORIZATION
(tests/unit/test_authorization_table.py) and its step there."""
from __future__ import annotations

from minikafka.broker import handlers
from minikafka.protocol.schema import API_NAMES

from . import golden
from .dsl import Call, admin_only
from .scenarios import unauthorized


def test_every_served_api_has_an_unauthorized_step_recorded_from_kafka():
    covered = set()
    for scenario in unauthorized.SCENARIOS:
        assert admin_only(scenario.broker), f"{scenario.name}: not on a broker where only admin is a super user"
        assert golden.golden_path(scenario.name).exists(), f"{scenario.name}: not recorded from Kafka"
        covered |= {s.api for s in scenario.steps if isinstance(s, Call) and s.conn != "main"}
    missing = sorted(API_NAMES[k] for k in set(handlers.APIS) - covered)
    assert not missing, f"no unauthorized step in scenarios/unauthorized.py for {missing}"
