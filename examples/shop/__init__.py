"""The online shop (seed 004, "Kafka transactions deep dive"), with kafka-python.

    python -m examples.shop.purchases --count 10000     # purchase generator
    python -m examples.shop.service                     # purchases -> invoices + shipments, exactly once
    python -m examples.shop.checker --expect 10000      # exactly one invoice and shipment per purchase

All three take ``--bootstrap`` (env ``KAFKA_BOOTSTRAP_SERVERS``, default
127.0.0.1:9092); topic names default to purchases / invoices / shipments.
"""
