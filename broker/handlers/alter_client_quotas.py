"""AlterClientQuotas (49): set or remove quotas of user, client-id and ip entities, validated as
Kafka's ClientQuotaControlManager (broker/quotas.py), stored durably before the answer
(storage.dynamic_config.ClientQuotaStore) and applied to the quota managers at once.
ALTER_CONFIGS on the cluster (handlers/authorization.py)."""
import trio

from ..quotas import IP, alter_client_quotas, ip_literal, normalized_address


def _entity(entry) -> dict:
    # Kafka reads an entry's entity into a HashMap: a type named twice keeps its last name
    return {e.entity_type: e.entity_name for e in entry.entity}


def error_response(req, code, message, version=None):
    """Kafka's AlterClientQuotasRequest.getErrorResponse: every entry, its entity as sent, the error
    and its message."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": int(code), "error_message": message,
         "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
        for entry in req.entries]}


async def handle(conn, header, req):
    entries = [(_entity(e), [(op.key, None if op.remove else op.value) for op in e.ops]) for e in req.entries]
    # an ip entity may name a host: looked up in a worker thread, never on the event loop
    names = {ent[IP] for ent, _ in entries if ent.get(IP)}
    resolved = {n: ip_literal(n) for n in names}
    for n in [n for n, a in resolved.items() if a is None]:
        resolved[n] = await trio.to_thread.run_sync(normalized_address, n)
    ctx = conn.ctx
    results, changed = alter_client_quotas(ctx.client_quotas.entities, entries, lambda n: resolved.get(n) is not None)
    if changed and not req.validate_only:
        ctx.alter_client_quotas(changed, resolved)
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": message,
         "entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()]}
        for entity, code, message in results]}
