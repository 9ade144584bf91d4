"""``minikafka console``: a small web application that shows a Kafka cluster's exactly-once
state (open and hanging transactions, what holds each last stable offset back, transaction
timelines from ``__transaction_state``, true read_committed lag), reading it through Kafka's
APIs only, so it works against Apache Kafka as well as minikafka.

A client of the cluster, not part of the broker: it imports protocol/, the operator tools'
wire client and the transaction coordinator's record decoder, and needs the ``console``
extra (Starlette, hypercorn, Jinja2). See cli.py for the command line, app.py for the pages.
"""
