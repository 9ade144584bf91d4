"""``python -m minikafka``: the ``minikafka`` command (the broker, and its subcommands)."""
from minikafka.broker.cli import main

main()
