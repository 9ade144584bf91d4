"""`minikafka format`: Kafka's ``kafka-storage.sh format`` for a minikafka data dir.

    minikafka format [--config FILE] [--override KEY=VALUE ...] [--feature NAME=LEVEL ...]
                     [--cluster-id ID] [--ignore-formatted]

Writes ``meta.properties`` (node id, cluster id, directory id) and the finalized feature
levels (Kafka 4.1's defaults, transaction.version=2, unless ``--feature`` says otherwise,
e.g. ``--feature transaction.version=1``) into the first of ``log.dirs``. A broker
starting on a data dir that was never formatted formats it with the defaults, so this
is needed only to start with other levels (``minikafka features`` changes them later).
A formatted dir is refused (exit 1) unless ``--ignore-formatted``; a dir held by a
running broker is refused too. Messages are kafka-storage.sh's.
"""
from __future__ import annotations

import argparse
import os
import sys

from minikafka.broker.config import BrokerConfig, ConfigError
from minikafka.broker.features import (METADATA_VERSION, FeatureError, FinalizedFeatures, initial_levels,
                                       parse_feature_arg)
from minikafka.storage.checkpoint import (META_PROPERTIES, random_kafka_uuid, uuid_from_base64, uuid_to_base64,
                                          write_properties)
from minikafka.storage.log_manager import DirLock, LogDirLockedError


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="minikafka format", description="Format a data dir (kafka-storage.sh format).")
    ap.add_argument("--config", help="broker.properties file (its log.dirs and node.id are used)")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--feature", "-f", action="append", default=[], metavar="NAME=LEVEL",
                    help="a finalized feature level, e.g. transaction.version=1; repeatable")
    ap.add_argument("--cluster-id", "-t", help="the cluster id (22 characters, base64url); random if not given")
    ap.add_argument("--ignore-formatted", "-g", action="store_true",
                    help="exit 0 when the data dir is already formatted")
    args = ap.parse_args(argv)
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as e:
        print(f"minikafka: configuration error: {e}", file=sys.stderr)
        return 2
    try:
        requested = dict(parse_feature_arg(f) for f in args.feature)
        levels = initial_levels(requested)
        cluster_id = args.cluster_id or uuid_to_base64(random_kafka_uuid())
        if args.cluster_id:
            try:
                if len(args.cluster_id) != 22:
                    raise ValueError
                uuid_from_base64(args.cluster_id)
            except ValueError:
                raise FeatureError(f"Cluster ID string {args.cluster_id} does not appear to be a valid UUID") from None
    except FeatureError as e:
        print(str(e), file=sys.stderr)
        return 1
    d = config.log_dir
    if os.path.exists(os.path.join(d, META_PROPERTIES)) or os.path.exists(FinalizedFeatures.path_in(d)):
        if args.ignore_formatted:
            print(f"Log directory {d} is already formatted: skipped.")
            return 0
        print(f"Log directory {d} is already formatted. Use --ignore-formatted to ignore this directory "
              f"and format the others.", file=sys.stderr)
        return 1
    os.makedirs(d, exist_ok=True)
    lock = DirLock(d)
    try:
        lock.acquire()
    except LogDirLockedError as e:
        print(f"minikafka format: {e}", file=sys.stderr)
        return 1
    try:
        # the levels first: meta.properties is what marks the dir as formatted
        ff = FinalizedFeatures(FinalizedFeatures.path_in(d), levels, 1)
        ff.save()
        write_properties(os.path.join(d, META_PROPERTIES),
                         {"node.id": str(config.node_id), "directory.id": uuid_to_base64(random_kafka_uuid()),
                          "version": "1", "cluster.id": cluster_id})
    finally:
        lock.release()
    print(f"Formatting metadata directory {d} with {METADATA_VERSION} 4.1-IV1 "
          f"({ff.describe_levels()}).")
    return 0
