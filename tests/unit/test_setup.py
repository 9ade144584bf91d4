"""What a newcomer meets first (issue 16): `make run` installs the broker alone, the
extras come with `make test` / `make pipeline`, skips are reported with their reasons,
and what the broker and the pipeline write by default is ignored by git."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make_dry_run(target: str, tmp_path: Path) -> list[str]:
    """The commands `make TARGET` would run on a fresh clone (-B: nothing is up to date)."""
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    r = subprocess.run(["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def pip_installs(lines: list[str]) -> list[str]:
    return [line for line in lines if re.search(r"\bpip install\b", line)]


def test_make_run_installs_the_broker_without_extras(tmp_path):
    installs = pip_installs(make_dry_run("run", tmp_path))
    assert installs, "make run installs nothing on a fresh clone"
    assert not [line for line in installs if "[" in line], installs  # no '.[test]', '.[spark]'
    assert "pyspark" not in " ".join(installs)


@pytest.mark.parametrize("target,extras", [("test", "test,spark"), ("pipeline", "spark")])
def test_extras_come_with_their_target(tmp_path, target, extras):
    installs = pip_installs(make_dry_run(target, tmp_path))
    assert any(f".[{extras}]" in line for line in installs), installs


# top-level modules of the extras' packages (pyproject's [project.optional-dependencies])
EXTRAS_MODULES = {"pytest", "pytest_timeout", "xdist", "kafka", "confluent_kafka", "aiokafka", "yaml",
                  "pyspark", "pyarrow", "pandas", "starlette", "hypercorn", "jinja2", "multipart",
                  "python_multipart", "selenium"}


def test_the_broker_imports_none_of_the_extras():
    # so what `make run` installs is enough to run it
    r = subprocess.run([sys.executable, "-c",
                        "import sys, minikafka.broker.cli, minikafka.broker.main, minikafka.broker.broker,"
                        " minikafka.broker.metrics;"
                        " print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    imported = set(r.stdout.split())
    assert not imported & EXTRAS_MODULES


def test_the_start_path_leaves_what_the_first_requests_do_not_need():
    """What a start imports before its ready line: not the compression codecs, the metrics
    endpoint (prometheus_client), the log cleaner, the operator tools or thread pools. Each
    comes with its first use (every module on this path costs every start, ~0.1-2 ms)."""
    r = subprocess.run([sys.executable, "-c",
                        "import sys, minikafka.broker.cli, minikafka.broker.main;"
                        " print(' '.join(sorted(sys.modules)))"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    imported = set(r.stdout.split())
    lazy = {"gzip", "lz4", "zstandard", "snappy", "cramjam", "crc32c", "prometheus_client",
            "concurrent.futures", "minikafka.storage.cleaner", "minikafka.broker.metrics",
            "minikafka.broker.tools.dump_log", "minikafka.admin.transactions",
            # the web console: a client application, imported by its subcommand only
            "minikafka.console", "minikafka.console.cli", "minikafka.console.app",
            # SSL and SASL listeners only; partition logs (none in an empty data dir); argparse
            # only for --help and unusual command lines (broker/cli.py). (protocol.records stays
            # a start-time import of broker.py: imported in its methods, it cost every commit more
            # than the millisecond it saves a start)
            "minikafka.broker.security.tls", "minikafka.broker.security.sasl", "minikafka.storage.log",
            "minikafka.storage.segment", "minikafka.storage.producer_state", "argparse"}
    assert not imported & lazy


def test_pytest_reports_skip_reasons():
    opts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-rs" in opts.get("addopts", "").split()


def test_default_outputs_are_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    from minikafka.pipeline.job import parse_args
    args = parse_args([])
    paths = ["data/meta.properties",  # the broker's log.dirs default (./data)
             f"{args.output}/snapshot-000000000000/part-0.parquet", f"{args.checkpoint}/offsets/0",
             "artifacts/spark-0/x"]
    r = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    ignored = {Path(p).as_posix() for p in r.stdout.split()}
    assert ignored == {Path(p).as_posix() for p in paths}, r.stdout


def readme_section(title: str, path: str = "README.md") -> str:
    text = (ROOT / path).read_text()
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_readme_says_how_to_activate_the_environment():
    assert ". .venv/bin/activate" in readme_section("Set-up")


def test_readme_outgrowing_one_machine_commands_match_the_code():
    from minikafka.pipeline.job import CONNECTOR_JARS, KAFKA_PACKAGE, parse_args
    section = readme_section("Outgrowing one machine", "docs/operations.md")
    code_blocks = section.split("```")[1::2]
    [submit] = [block for block in code_blocks if "spark-submit --master" in block]
    assert f"--packages {KAFKA_PACKAGE}:4.0.0" in submit
    assert CONNECTOR_JARS["spark-sql-kafka-0-10_2.13"].endswith("-4.0.0.jar")
    _, _, job_args = submit.partition("pipeline/__main__.py")
    assert job_args and (ROOT / "pipeline" / "__main__.py").is_file()
    # what follows the script is the job's own command line, which it accepts
    argv = job_args.replace("\\\n", " ").split()
    assert parse_args(argv).source == "kafka"
    # the shop's programs need only the bootstrap address (KAFKA_BOOTSTRAP_SERVERS)
    assert "export KAFKA_BOOTSTRAP_SERVERS=" in section
    for key in ("default.replication.factor", "min.insync.replicas",
                "transaction.state.log.replication.factor", "offsets.topic.replication.factor"):
        assert f"`{key}`" in section


def test_make_test_runs_the_suite_in_parallel_with_the_docker_tests_in_one_worker(tmp_path):
    """`make test` passes -n to pytest (pytest-xdist, a test extra); tests/conftest.py puts
    every docker test in one xdist scope (one worker: images built once, one stack at a time)
    and keeps the others apart by file (conformance by scenario family)."""
    [pytest_line] = [line for line in make_dry_run("test", tmp_path) if " -m pytest " in line]
    assert re.search(r" -n \d+ ", pytest_line), pytest_line
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(dep.startswith("pytest-xdist") for dep in test_extra)
    import importlib.util  # a copy of tests/conftest.py ("conftest" may be another one here)
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    scopes = {conftest.xdist_scope(n) for n in ("tests/docker/test_images.py::test_a",
                                                 "tests/docker/test_compose.py::test_b[shop]")}
    assert scopes == {"tests/docker"}
    assert conftest.xdist_scope("tests/unit/test_setup.py::test_x[1]") == "tests/unit/test_setup.py"
    assert conftest.xdist_scope("tests/conformance/test_conformance.py::test_scenario_matches_kafka[txn/a/b]") \
        == "tests/conformance/test_conformance.py::txn"
    assert conftest.xdist_rank("tests/docker") == 0
