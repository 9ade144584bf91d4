"""minikafka's Spark pipeline (optional extra ``minikafka[spark]``).

* :mod:`pipeline.source`  -- ``minikafka`` PySpark 4 Python streaming data source
  (read_committed, Spark's Kafka source schema, per-partition offsets).
* :mod:`pipeline.job`     -- the shop revenue job: invoices (JSON) -> revenue per
  product -> Parquet snapshots, with a checkpoint (``python -m pipeline``).
* :mod:`pipeline.results` -- read the newest complete revenue snapshot.

Nothing here imports pyspark at package import time.
"""
