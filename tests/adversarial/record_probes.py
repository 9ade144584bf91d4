"""Record the probes' answers (probes.py) from a throwaway Apache Kafka 4.1 (never in CI).

    cd tests && PYTHONPATH=$PWD/.. ../.venv/bin/python -m adversarial.record_probes [-k SUBSTRING]

Starts the reference Kafka (tests/conformance/kafka_reference.py: ``REFERENCE_DIR``) with a
PLAINTEXT and a SASL_PLAINTEXT listener (PLAIN and SCRAM-SHA-256, user alice), runs each probe
on a fresh connection and writes golden/probes.json (name -> observations). The file is what
Kafka answered: recorded, never edited by hand.
"""
from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path

from conformance.dsl import SECURED
from conformance.kafka_reference import KafkaCluster, unavailable_reason
from minikafka.broker.security.sasl import salted_password
from minikafka.admin.wire import WireClient

from .probes import PROBES, USERS, run

GOLDEN = Path(__file__).resolve().parent / "golden" / "probes.json"
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
# what both brokers run with (the test's minikafka mirrors it): the secured scenarios' listeners
# (conformance/dsl.py SECURED: SASL_PLAINTEXT with PLAIN users) plus SCRAM-SHA-256
BROKER = {**SECURED, "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
          "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS}


def add_scram_user(bootstrap: str, user: str, password: str) -> None:
    salt = secrets.token_bytes(16)
    with WireClient.to(bootstrap) as c:
        r = c.request(51, 0, {"deletions": [], "upsertions": [{
            "name": user, "mechanism": 1, "iterations": 4096, "salt": salt,
            "salted_password": salted_password("SCRAM-SHA-256", password, salt, 4096)}]})
    assert [x.error_code for x in r.results] == [0], r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="record only probes whose name contains this")
    args = ap.parse_args(argv)
    reason = unavailable_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    cluster = KafkaCluster(BROKER)
    try:
        cluster.start()
        add_scram_user(cluster.bootstrap, "alice", USERS["alice"])
        ports = {"PLAINTEXT": cluster.node1.port, "SASL_PLAINTEXT": cluster.sasl_port}
        for name, p in PROBES.items():
            if args.k in name:
                try:
                    golden[name] = run(p, "127.0.0.1", ports[p.listener])
                except Exception as e:  # a probe that cannot run: fix it and record again
                    print(f"{name}: FAILED {e!r}", file=sys.stderr)
                    continue
                print(f"{name}: {golden[name]}")
    finally:
        cluster.close()
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
