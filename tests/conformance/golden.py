"""Golden files: Kafka's normalized answers, one JSON file per scenario."""
from __future__ import annotations

import json
from pathlib import Path

from .kafka_reference import KAFKA_VERSION
from .normalize import flatten

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def feature_args(features: dict) -> tuple[str, ...]:
    """{"transaction.version": 2} -> ("transaction.version=2",): kafka-storage.sh's --feature values."""
    return tuple(f"{k}={v}" for k, v in sorted(features.items()))


def recorded_from(features: dict) -> str:
    return (f"Apache Kafka {KAFKA_VERSION} (KRaft, node 1 broker+controller; node 2 broker for held topics; "
            f"{', '.join(feature_args(features))})")
# Topics whose markers cannot be written: in minikafka through MINIKAFKA_FAULT_HOLD_MARKERS.
HELD_PREFIX = "cfheld-"


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def write(scenario, transcript: list[dict]) -> Path:
    path = golden_path(scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"scenario": scenario.name, "doc": scenario.doc, "recorded_from": recorded_from(scenario.features),
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


def compare(scenario, kafka_steps: list[dict], our_steps: list[dict], differences) -> list[str]:
    """Human-readable mismatches: scenario, step, field, Kafka's value, ours. Fields a
    scenario declares deliberately different (``Scenario.differs``) must hold exactly the
    declared answer instead of Kafka's."""
    name = scenario.name
    out = []
    for k, o in zip(kafka_steps, our_steps):
        what = k.get("label") or (k["request"]["api"] + f" v{k['request']['version']}" if "request" in k
                                  else f"restart ({k.get('restart')})")
        where = f"{name}, step {k['step']} ({what})"
        if "restart" in k or "restart" in o:
            if k.get("restart") != o.get("restart"):
                out.append(f"{where}: Kafka {k.get('restart')!r}, minikafka {o.get('restart')!r}")
            continue
        for path, kv, ov in differences(k["request"], o["request"]):
            out.append(f"{where}: request field {path}: Kafka's run sent {kv!r}, ours {ov!r}")
        declared = declared_at(scenario, k["step"])
        ours_flat = flatten(o["response"])
        for path, kv, ov in differences(k["response"], o["response"]):
            if any(_under(path, p) for d in declared for p in d.ours):
                continue
            out.append(f"{where}: field {path}: Kafka {kv!r}, minikafka {ov!r}")
        for d in declared:
            for p, want in d.ours.items():
                got = {q: v for q, v in ours_flat.items() if _under(q, p)}
                if got != flatten(want, p):
                    out.append(f"{where}: field {p} is declared different from Kafka ({d.reason}) as "
                               f"{want!r}, but minikafka answered {got!r}")
    if len(out) > 40:
        out = out[:40] + [f"... and {len(out) - 40} more differences"]
    if len(kafka_steps) != len(our_steps):
        out.append(f"{name}: Kafka's transcript has {len(kafka_steps)} steps, ours {len(our_steps)}")
    return out


def declared_at(scenario, step: int) -> list:
    """The Differs a scenario declares for a step (one, or a list of them for several reasons)."""
    d = scenario.differs.get(step)
    return [] if d is None else list(d) if isinstance(d, (list, tuple)) else [d]


def all_declared(scenario) -> list:
    return [d for step in scenario.differs for d in declared_at(scenario, step)]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")
