# Two commands do all set-up on a fresh clone: `make run` and `make test`.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PYTHON  ?= python3
EXT     ?= $(abspath ..)/ext

.PHONY: run test schema bench clean conformance-record

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	# PYTHONDONTWRITEBYTECODE is common in CI images: precompile once so every
	# broker start does not recompile every module from source.
	$(PY) -m compileall -q -j 0 $(VENV)/lib broker protocol storage coordinator > /dev/null || true
	touch $@

# Run the broker with embedded defaults (127.0.0.1:9092, data in ./data).
run: $(VENV)/.installed
	$(PY) -m broker $(ARGS)

# Everything the tests need, then the whole suite (slow tests included).
test: $(VENV)/.installed
	-$(PY) tests/java/setup_jars.py --ext $(EXT)
	MINIKAFKA_EXT=$(EXT) $(PY) -m pytest $(PYTEST_ARGS)

# Re-derive protocol/schema.json and protocol/errors.py from ../shared/kafka-protocol.
schema:
	$(PYTHON) tools/gen_protocol.py

# Record tests/conformance/golden from a real Apache Kafka 4.1 (../reference, see
# tests/conformance/README.md); ARGS='-k txn/' for some scenarios, ARGS=--check to compare.
conformance-record: $(VENV)/.installed
	cd tests && $(abspath $(PY)) -m conformance.record $(ARGS)

bench: $(VENV)/.installed
	$(PY) bench/throughput.py $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
