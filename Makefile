# Two commands do all set-up on a fresh clone: `make run` and `make test`.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PYTHON  ?= python3
EXT     ?= $(abspath ..)/ext

.PHONY: run test docker-test schema bench bench-scale clean conformance-record

# `make run` installs only the broker's dependencies (seconds); `make test` adds
# the test clients and pyspark, `make pipeline` pyspark, to the same venv.
$(VENV)/.installed-broker: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	# PYTHONDONTWRITEBYTECODE is common in CI images: precompile once so every
	# broker start does not recompile every module from source.
	$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $@

# The checkout's own modules, again whenever one changed (a start that compiles a
# stale module from source takes ~50 ms longer; tests/conftest.py does the same). The
# folders are pyproject's package-dir, the one list of them.
CODE_DIRS := $(shell $(PYTHON) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"].values())')
CODE := $(shell find $(CODE_DIRS) -name '*.py' 2>/dev/null)
$(VENV)/.compiled: $(VENV)/.installed-broker $(CODE)
	$(PY) -m compileall -q -j 0 $(CODE_DIRS) > /dev/null || true
	touch $@

# Everything: the test clients and the Spark pipeline.
$(VENV)/.installed: $(VENV)/.installed-broker
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $@

$(VENV)/.installed-spark: $(VENV)/.installed-broker
	$(PY) -m pip install -q -e '.[spark]'
	touch $@

# Run the broker with embedded defaults (127.0.0.1:9092, data in ./data).
run: $(VENV)/.compiled
	$(PY) -m minikafka $(ARGS)

# The Spark revenue job (python -m minikafka.pipeline, see README): ARGS='--topic invoices ...'.
.PHONY: pipeline
pipeline: $(VENV)/.installed-spark
	$(PY) -m minikafka.pipeline $(ARGS)

# Everything the tests need, then the whole suite (slow tests included), in
# PYTEST_WORKERS processes (pytest-xdist): the suite mostly waits on JVM starts,
# client timeouts and polls, so 4 workers on 2 cores take about half the time
# of one. tests/conftest.py says which tests share a worker (the docker tests) and
# starts the slowest first. PYTEST_WORKERS=0 runs it in this one process.
PYTEST_WORKERS ?= 4
test: $(VENV)/.installed $(VENV)/.compiled
	-$(PY) tests/java/setup_jars.py --ext $(EXT)
	MINIKAFKA_EXT=$(EXT) $(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The docker tests alone (tests/docker: images built, containers and compose
# stacks run on the host's network). First brings up what is missing: as root,
# docker.io and debootstrap (apt), Compose v2 (PyPI, in a venv), dockerd with no
# bridge and no iptables, a base image (pulled, else built from Debian packages);
# see tests/docker/sandbox.py. Fails if no daemon can be had.
docker-test: $(VENV)/.installed $(VENV)/.compiled
	-$(PY) tests/java/setup_jars.py --ext $(EXT)
	$(PYTHON) tests/docker/sandbox.py up
	MINIKAFKA_EXT=$(EXT) $(PY) -m pytest tests/docker $(PYTEST_ARGS)

# Re-derive protocol/schema.jsonl and protocol/errors.py from ../shared/kafka-protocol.
schema:
	$(PYTHON) tools/gen_protocol.py

# Record tests/conformance/golden from a real Apache Kafka 4.1 (../reference, see
# tests/conformance/README.md); ARGS='-k txn/' for some scenarios, ARGS=--check to compare.
conformance-record: $(VENV)/.installed
	# (the checkout's root on PYTHONPATH: this checkout's code, whatever checkout the venv's
	# editable install points at)
	cd tests && PYTHONPATH=$(CURDIR) $(abspath $(PY)) -m conformance.record $(ARGS)

# Side by side with Apache Kafka: ARGS='--reference-bootstrap 127.0.0.1:19092' (see bench/throughput.py).
# The broker runs on this venv's interpreter: a CPython built without PGO/LTO (pyenv's default)
# costs it 10-15% more CPU than Debian's or the official images' (README, Benchmark), so the
# README's table comes from `make bench PYTHON=/usr/bin/python3.11 VENV=.venv-pgo ARGS=...`.
# Then throughput over TLS beside plaintext (bench/tls.py, minikafka alone).
bench: $(VENV)/.installed $(VENV)/.compiled
	$(PY) bench/throughput.py $(ARGS)
	$(PY) bench/tls.py

# How minikafka grows with partitions, producers, transaction size and data (README "Scale").
bench-scale: $(VENV)/.installed $(VENV)/.compiled
	$(PY) bench/scale.py $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
