"""Raw frames and SASL misuse (probes.py) against minikafka, each answered as Apache Kafka 4.1
answered it (golden/probes.json, recorded by record_probes.py), while a well-behaved producer
and read_committed consumer keep working; after each probe the broker still serves."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.dsl import sasl_listener_settings
from harness import BrokerProcess, free_port
from minikafka.admin.wire import WireClient

from .probes import PROBES, USERS, run
from .record_probes import BROKER, add_scram_user

HERE = Path(__file__).resolve().parent
GOLDEN = json.loads((HERE / "golden" / "probes.json").read_text())
SCRAM_REFUSED = [{"corr": 1, "error_code": 0},
                 {"corr": 2, "error_code": 58, "error_message": "Authentication failed during authentication due to "
                                                               "invalid credentials with SASL mechanism SCRAM-SHA-256"},
                 "closed"]
# Where minikafka answers otherwise on purpose: probe -> (reason, a row of
# tests/conformance/DIFFERENCES.md; minikafka's exact observations)
DIFFERS = {
    "sasl/scram_long_user_name": ("scram-long-user-name", SCRAM_REFUSED),
    "sasl/scram_huge_user_name": ("scram-long-user-name", SCRAM_REFUSED),
}


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """minikafka set up as the recorded Kafka: PLAINTEXT and SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256)."""
    sasl_port = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("probed") / "data", name="probed")
    b.overrides = {**sasl_listener_settings(sasl_port), **BROKER,
                   "listeners": f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"}
    b.ports = {"PLAINTEXT": b.port, "SASL_PLAINTEXT": sasl_port}
    try:
        b.start()
        add_scram_user(b.bootstrap, "alice", USERS["alice"])
        yield b
    finally:
        b.close()


def serves(b) -> bool:
    with WireClient.to(b.bootstrap) as c:
        return c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_gets_kafkas_answer(probed, bystander, name):
    if name not in GOLDEN:
        pytest.fail(f"{name} has no recorded answer: cd tests && python -m adversarial.record_probes -k {name}")
    by = bystander(probed.bootstrap)
    probe = PROBES[name]
    expected = DIFFERS[name][1] if name in DIFFERS else GOLDEN[name]
    assert run(probe, "127.0.0.1", probed.ports[probe.listener]) == expected, probe.doc
    assert probed.running and serves(probed)
    by.wait_progress()


def test_every_difference_is_declared():
    text = (HERE.parent / "conformance" / "DIFFERENCES.md").read_text()
    for name, (reason, _) in DIFFERS.items():
        assert f"| `{reason}` |" in text, name
        assert GOLDEN[name] != DIFFERS[name][1], f"{name}: Kafka answers so too now; drop the difference"
