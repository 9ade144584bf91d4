"""Topics, events and their JSON, shared by the shop's programs."""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass

PURCHASES = "purchases"
INVOICES = "invoices"
SHIPMENTS = "shipments"

PRODUCTS = {f"prod-{i:02d}": 499 + 250 * i for i in range(12)}  # product id -> unit price (cents)
FIRST_NAMES = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken")
LAST_NAMES = ("Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson")


def default_bootstrap() -> str:
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")


def purchase_id(i: int) -> str:
    return f"p-{i:07d}"


@dataclass
class Purchase:
    purchase_id: str
    user_id: str
    user_full_name: str
    product_id: str
    quantity: int
    unit_price_cents: int
    purchased_at: int

    @classmethod
    def generate(cls, i: int, seed: int = 4) -> "Purchase":
        """Purchase number ``i``: deterministic, so a restarted generator
        re-creates exactly the purchases it has not written yet."""
        r = random.Random(seed * 1_000_003 + i)
        product = r.choice(sorted(PRODUCTS))
        user = r.randrange(500)
        return cls(purchase_id=purchase_id(i), user_id=f"u-{user:03d}",
                   user_full_name=f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}",
                   product_id=product, quantity=r.randint(1, 5),
                   unit_price_cents=PRODUCTS[product], purchased_at=int(time.time() * 1000))

    @classmethod
    def from_json(cls, raw: bytes) -> "Purchase":
        return cls(**json.loads(raw))

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @property
    def key(self) -> bytes:
        return self.purchase_id.encode()


def invoice_for(p: Purchase) -> dict:
    return {"invoice_id": f"inv-{p.purchase_id}", "purchase_id": p.purchase_id,
            "user_id": p.user_id, "product_id": p.product_id, "quantity": p.quantity,
            "unit_price_cents": p.unit_price_cents,
            "amount_cents": p.quantity * p.unit_price_cents, "currency": "EUR",
            "purchased_at": p.purchased_at}


def shipment_for(p: Purchase) -> dict:
    return {"shipment_id": f"shp-{p.purchase_id}", "purchase_id": p.purchase_id,
            "product_id": p.product_id, "quantity": p.quantity,
            "recipient": p.user_full_name, "address": "SomeStreet 12/18, 00-006 Warsaw"}


def dumps(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def ensure_topics(bootstrap: str, topics: dict[str, int], timeout_s: float = 30) -> None:
    """Create ``{topic: partitions}`` if missing (idempotent, tolerates races)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                                     client_id="shop-admin", request_timeout_ms=10_000)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        existing = set(admin.list_topics())
        # replication factor -1: the cluster's default.replication.factor (KIP-464), so the
        # same call makes replicated topics on a Kafka cluster (docs/operations.md, "Outgrowing one machine")
        new = [NewTopic(t, n, -1) for t, n in topics.items() if t not in existing]
        if new:
            try:
                admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
