"""Example applications that run against minikafka (see README.md, "Examples")."""
