"""Replay every recorded scenario against minikafka and compare with Kafka's answers.

One broker per group of scenarios with the same settings (scenarios are isolated
by their unique names), started with MINIKAFKA_FAULT_HOLD_MARKERS so that held
topics behave as partitions whose leader is offline. A failure names the
scenario, the step, the field, Kafka's value and ours.
"""
from __future__ import annotations

import pytest

from harness import BrokerProcess, free_port

from . import api_versions, certs, golden
from .dsl import (NAMED_HOST, NAMED_LISTENER, admin_only, log_dirs_setting, named_listener, sasl_listener_settings,
                  secured, ssl_listener_settings)
from .normalize import differences
from .runner import ADMIN_LOGIN, Run, warm_up
from .scenarios import all_scenarios

SCENARIOS = all_scenarios()


class MinikafkaTarget:
    held_prefix = golden.HELD_PREFIX
    creates_held_topics_itself = False

    def __init__(self, broker: BrokerProcess):
        self.broker = broker

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    @property
    def sasl_bootstrap(self) -> str | None:
        return getattr(self.broker, "sasl_bootstrap", None)

    @property
    def ssl_bootstrap(self) -> str | None:
        return getattr(self.broker, "ssl_bootstrap", None)

    @property
    def listeners(self) -> dict[str, str | None]:
        """Listener name -> host:port: the endpoints an answer may name (normalize.py)."""
        return {"PLAINTEXT": self.bootstrap, "SASL_PLAINTEXT": self.sasl_bootstrap, "SSL": self.ssl_bootstrap,
                NAMED_LISTENER: getattr(self.broker, "named_bootstrap", None)}

    def restart(self, kill: bool) -> None:
        self.broker.restart(kill=kill)


def _start(tmp_path_factory, scenario, name: str) -> MinikafkaTarget:
    overrides = dict(scenario.broker)
    port = sasl_port = ssl_port = named_port = None
    if secured(scenario.broker):  # the SASL_PLAINTEXT and SSL listeners of secured scenarios (dsl.SECURED)
        reason = certs.unavailable_reason()
        if reason:
            pytest.skip(f"the SSL listener of secured scenarios: {reason}")
        port, sasl_port, ssl_port = free_port(), free_port(), free_port()
        # the scenario's own settings win (a SASL mechanism list), as on the Kafka side
        overrides = {**sasl_listener_settings(sasl_port), **ssl_listener_settings(), **overrides,
                     "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                                  f"SSL://127.0.0.1:{ssl_port}"}
    if named_listener(scenario.broker):  # dsl.NAMED_LISTENERS: CLIENT beside PLAINTEXT, advertised as NAMED_HOST
        port, named_port = free_port(), free_port()
        overrides.update(listeners=f"PLAINTEXT://127.0.0.1:{port},{NAMED_LISTENER}://127.0.0.1:{named_port}",
                         **{"advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},"
                                                    f"{NAMED_LISTENER}://{NAMED_HOST}:{named_port}"})
    data = tmp_path_factory.mktemp("conformance") / "data"
    if "log.dirs" in overrides:   # dsl.TWO_LOG_DIRS: dirs inside the data dir
        overrides["log.dirs"] = log_dirs_setting(overrides, data)
    b = BrokerProcess(data, port=port, overrides=overrides,
                      env={"MINIKAFKA_FAULT_HOLD_MARKERS": golden.HELD_PREFIX}, name=name,
                      features=scenario.features)
    b.sasl_bootstrap = None if sasl_port is None else f"127.0.0.1:{sasl_port}"
    b.ssl_bootstrap = None if ssl_port is None else f"127.0.0.1:{ssl_port}"
    b.named_bootstrap = None if named_port is None else f"127.0.0.1:{named_port}"
    if admin_only(scenario.broker):
        ADMIN_LOGIN[b.bootstrap] = b.sasl_bootstrap
    b.start()
    warm_up(b.bootstrap, timeout=30)
    return MinikafkaTarget(b)


@pytest.fixture(scope="module")
def shared_brokers(tmp_path_factory):
    """One running minikafka per group of scenarios with the same broker settings."""
    made: dict[tuple, MinikafkaTarget] = {}
    yield made
    for t in made.values():
        t.broker.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_matches_kafka(scenario, shared_brokers, tmp_path_factory):
    recorded = golden.load(scenario.name)
    if recorded is None:
        pytest.fail(f"{scenario.name}: no golden file {golden.golden_path(scenario.name)}; "
                    f"record it against the reference Kafka: make conformance-record ARGS='-k {scenario.name}'")
    own = scenario.own_broker
    if own:
        target = _start(tmp_path_factory, scenario, "conformance-own")
    else:
        target = shared_brokers.get(scenario.config_key)
        if target is None:
            target = shared_brokers[scenario.config_key] = _start(tmp_path_factory, scenario,
                                                                  f"conformance-{len(shared_brokers)}")
    try:
        ours = Run(scenario, target).run()
        mismatches = golden.compare(scenario, recorded["steps"], ours, differences)
        assert not mismatches, ("minikafka differs from Kafka:\n  " + "\n  ".join(mismatches)
                                + target.broker.describe(30))
    finally:
        if own:
            target.broker.close()


def test_every_declared_difference_is_explained():
    """Each reason a scenario gives for differing from Kafka is a row of DIFFERENCES.md."""
    text = (golden.GOLDEN_DIR.parent / "DIFFERENCES.md").read_text()
    missing = sorted({f"{s.name}: {d.reason}" for s in SCENARIOS for d in s.differs.values()
                      if f"`{d.reason}`" not in text})
    missing += sorted({f"api_versions.py: {reason}" for _, reason in api_versions.APIS.values()
                       if f"`{reason}`" not in text})
    missing += sorted({f"api_versions.py: {row[2]}" for row in api_versions.FEATURES.values()
                       if f"`{row[2]}`" not in text})
    assert not missing, f"reasons not in DIFFERENCES.md: {missing}"


def test_every_golden_file_has_a_scenario():
    names = {s.name for s in SCENARIOS}
    stale = sorted(golden.all_recorded() - names)
    assert not stale, f"golden files without a scenario (delete or re-record): {stale}"
