"""Golden files: Kafka's normalized answers, one JSON file per scenario."""
from __future__ import annotations

import json
from pathlib import Path

from .kafka_reference import FEATURES, KAFKA_VERSION

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
RECORDED_FROM = (f"Apache Kafka {KAFKA_VERSION} (KRaft, node 1 broker+controller; node 2 broker for held topics; "
                 f"{', '.join(FEATURES)})")
# Topics whose markers cannot be written: in minikafka through MINIKAFKA_FAULT_HOLD_MARKERS.
HELD_PREFIX = "cfheld-"


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def write(scenario, transcript: list[dict]) -> Path:
    path = golden_path(scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"scenario": scenario.name, "doc": scenario.doc, "recorded_from": RECORDED_FROM,
           "broker_config": dict(sorted(scenario.broker.items())), "steps": transcript}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load(name: str) -> dict | None:
    path = golden_path(name)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def all_recorded() -> set[str]:
    return {str(p.relative_to(GOLDEN_DIR))[:-5] for p in GOLDEN_DIR.rglob("*.json")}


def compare(scenario_name: str, kafka_steps: list[dict], our_steps: list[dict], differences) -> list[str]:
    """Human-readable mismatches: scenario, step, field, Kafka's value, ours."""
    out = []
    for k, o in zip(kafka_steps, our_steps):
        what = k.get("label") or (k["request"]["api"] + f" v{k['request']['version']}" if "request" in k
                                  else f"restart ({k.get('restart')})")
        where = f"{scenario_name}, step {k['step']} ({what})"
        if "restart" in k or "restart" in o:
            if k.get("restart") != o.get("restart"):
                out.append(f"{where}: Kafka {k.get('restart')!r}, minikafka {o.get('restart')!r}")
            continue
        for path, kv, ov in differences(k["request"], o["request"]):
            out.append(f"{where}: request field {path}: Kafka's run sent {kv!r}, ours {ov!r}")
        for path, kv, ov in differences(k["response"], o["response"]):
            out.append(f"{where}: field {path}: Kafka {kv!r}, minikafka {ov!r}")
    if len(out) > 40:
        out = out[:40] + [f"... and {len(out) - 40} more differences"]
    if len(kafka_steps) != len(our_steps):
        out.append(f"{scenario_name}: Kafka's transcript has {len(kafka_steps)} steps, ours {len(our_steps)}")
    return out
