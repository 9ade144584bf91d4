"""Example applications that run against minikafka (see docs/examples.md)."""
