"""`minikafka features`: Kafka's ``kafka-features.sh`` (KIP-584) over the wire protocol.

    minikafka features --bootstrap-server HOST:PORT describe
    minikafka features --bootstrap-server HOST:PORT upgrade --feature transaction.version=2 [--dry-run]
    minikafka features --bootstrap-server HOST:PORT downgrade --feature transaction.version=1 [--unsafe] [--dry-run]
    minikafka features --bootstrap-server HOST:PORT disable --feature transaction.version [--unsafe] [--dry-run]

describe sends ApiVersions (v4) and prints, per supported feature in name order,
Kafka's line (``Feature: transaction.version<TAB>SupportedMinVersion: 0<TAB>...``; the
levels of metadata.version by release name). upgrade, downgrade and disable (a
downgrade to 0) send one UpdateFeatures (v2, ``validate_only`` with --dry-run) and
print one line per feature as Kafka's tool does; when the broker refuses, every
feature of the request is reported with the broker's message, then
``N out of N operation(s) failed.`` on stderr and exit code 1. It works against
Kafka too.
"""
from __future__ import annotations

import argparse
import sys

from minikafka.broker.features import (METADATA_VERSION, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, FeatureError,
                                       parse_feature_arg)
from .wire import WireClient

API_VERSIONS, API_UPDATE_FEATURES = 18, 57
# kafka-features.sh prints metadata.version levels by release name (Kafka's MetadataVersion)
RELEASES = {7: "3.3-IV3", 27: "4.1-IV1"}


def _level(name: str, level: int) -> str:
    return RELEASES.get(level, str(level)) if name == METADATA_VERSION else str(level)


def describe(client: WireClient, args, out) -> int:
    r = client.request(API_VERSIONS, 4, {"client_software_name": "minikafka-features",
                                         "client_software_version": "1"})
    finalized = {f.name: f.max_version_level for f in r.finalized_features or []}
    for f in sorted(r.supported_features or [], key=lambda f: f.name):
        print(f"Feature: {f.name}\tSupportedMinVersion: {_level(f.name, f.min_version)}\t"
              f"SupportedMaxVersion: {_level(f.name, f.max_version)}\t"
              f"FinalizedVersionLevel: {_level(f.name, finalized.get(f.name, 0))}\t"
              f"Epoch: {r.finalized_features_epoch}", file=out)
    return 0


def update(client: WireClient, args, out) -> int:
    verb = args.command
    if verb == "upgrade":
        kind = UPGRADE
    else:
        kind = UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE
    wanted = []
    for text in args.feature or []:
        if verb == "disable":
            wanted.append((text.strip(), 0))
            continue
        try:
            wanted.append(parse_feature_arg(text))
        except FeatureError as e:
            print(str(e), file=sys.stderr)
            return 1
    if not wanted:
        print(f"You must specify at least one feature to {verb}", file=sys.stderr)
        return 1
    body = {"timeout_ms": 60000, "validate_only": args.dry_run,
            "feature_updates": [{"feature": n, "max_version_level": lvl, "upgrade_type": kind} for n, lvl in wanted]}
    r = client.request(API_UPDATE_FEATURES, 2, body)
    for name, level in wanted:
        target = "" if verb == "disable" else f" to {_level(name, level)}"
        if r.error_code:
            print(f"Could not {verb} {name}{target}. {r.error_message}", file=out)
        elif args.dry_run:
            print(f"{name} can be {verb}d{target}." if verb != "upgrade" else f"{name} can be upgraded{target}.",
                  file=out)
        else:
            print(f"{name} was {verb}d{target}." if verb != "upgrade" else f"{name} was upgraded{target}.", file=out)
    if r.error_code:
        out.flush()
        print(f"{len(wanted)} out of {len(wanted)} operation(s) failed.", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="minikafka features", description="Manage feature flags (kafka-features.sh).")
    ap.add_argument("--bootstrap-server", required=True, help="HOST:PORT of a broker")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("describe", help="Describes the current active feature flags.")
    for verb, text in (("upgrade", "Upgrade one or more feature flags."),
                       ("downgrade", "Downgrade one or more feature flags."),
                       ("disable", "Disable one or more feature flags (a downgrade to zero).")):
        p = sub.add_parser(verb, help=text)
        p.add_argument("--feature", action="append",
                       help="feature=level (disable: the feature's name); repeatable")
        if verb != "upgrade":
            p.add_argument("--unsafe", action="store_true", help="an unsafe (lossy) downgrade")
        p.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
    return ap


def main(argv: list[str], out=None) -> int:
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    try:
        with WireClient.to(args.bootstrap_server.split(",")[0].strip(), client_id="minikafka-features") as c:
            rc = describe(c, args, out) if args.command == "describe" else update(c, args, out)
    except (OSError, ConnectionError) as e:
        print(f"Failed to talk to {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    out.flush()
    return rc
