"""minikafka's Spark pipeline (optional extra ``minikafka[spark]``).

* :mod:`minikafka.pipeline.source`  -- ``minikafka`` PySpark 4 Python streaming data source
  (read_committed, Spark's Kafka source schema, per-partition offsets).
* :mod:`minikafka.pipeline.job`     -- the shop revenue job: invoices (JSON) -> revenue per
  product -> Parquet snapshots, with a checkpoint (``python -m minikafka.pipeline``).
* :mod:`minikafka.pipeline.results` -- read the newest complete revenue snapshot.

Nothing here imports pyspark at package import time.
"""
