"""minikafka: a Kafka wire-protocol-compatible broker with exactly-once semantics.

One import name; the layers are its subpackages, each importing only the ones below it:

* :mod:`minikafka.broker`      -- trio server, request dispatch (one handler module per
  Kafka API), configuration, the ``minikafka`` command and its offline tools (format, dump-log)
* :mod:`minikafka.coordinator` -- transaction coordinator, group coordinator, producer ids
* :mod:`minikafka.storage`     -- partition logs in Kafka's on-disk format, indexes,
  producer state, recovery
* :mod:`minikafka.protocol`    -- sans-I/O: Kafka's message schemas, record batches, errors
* :mod:`minikafka.pipeline`    -- the Spark revenue job and the ``minikafka`` PySpark
  source (extra ``minikafka[spark]``)
* :mod:`minikafka.console`     -- ``minikafka console``, the web console: a client of any
  Kafka cluster (extra ``minikafka[console]``)
* :mod:`minikafka.admin`       -- the operator commands that talk to a broker over Kafka's
  protocol (acls, configs, features, transactions, healthcheck) and their wire client
* :mod:`minikafka.testing`     -- the pytest plugin: the ``minikafka_broker`` fixture

``python -m minikafka`` (or the ``minikafka`` command) runs the broker.
"""
from __future__ import annotations

import os as _os

__version__ = "0.1.0"

# In the repository each layer is a top-level folder next to this one (broker/, coordinator/,
# ...), which the wheel and `pip install -e` map under minikafka (pyproject's package-dir).
# Run from a checkout (its root on sys.path, as with `python -m pytest` there, or PYTHONPATH),
# the layers are found next to this folder, so a checkout always runs its own code, also when
# the venv's editable install points at another checkout of the project.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "broker")) and _os.path.isfile(
        _os.path.join(_root, "broker", "cli.py")):
    __path__.append(_root)  # noqa: F821 (a package's __path__)
    CHECKOUT: str | None = _root
else:
    CHECKOUT = None
