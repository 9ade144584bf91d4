"""AlterUserScramCredentials (51): the client (kafka-configs.sh, Admin.alterUserScramCredentials)
sends a salt and the salted password; the broker keeps only RFC 5802's StoredKey and ServerKey,
durably (storage.security_store) before answering. Validation and messages as Kafka's
ScramControlManager."""
from minikafka.protocol.errors import ErrorCode
from ..security.sasl import SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, scram_keys
from .describe_user_scram_credentials import MECHANISM_TYPES

MECHANISMS = {v: k for k, v in MECHANISM_TYPES.items()}


DUPLICATE = "A user credential cannot be altered twice in the same request"


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """Kafka's controller (recorded): the error once per user named, with its own message when refused."""
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        message = "This principal needs ALTER permission on the cluster."
    names = dict.fromkeys(x.name for x in list(req.deletions) + list(req.upsertions))
    return {"throttle_time_ms": 0, "results": [{"user": n, "error_code": int(code), "error_message": message}
                                               for n in names]}


async def handle(conn, header, req):
    store = conn.ctx.scram_credentials
    # Kafka's ScramControlManager.alterCredentials: one change per user and request (two
    # mechanisms of one user in one request are a duplicate too); a user's first error wins
    # and makes Kafka skip the user's later entries, deletions being looked at first
    errors: dict[str, tuple[int, str | None]] = {}
    deletes: dict[str, tuple[str, str]] = {}
    upserts: dict[str, tuple] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletes.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
            continue
        mech = MECHANISMS.get(d.mechanism)
        error = _name_and_mechanism_error(d.name, mech)
        if error is None and store.lookup(d.name, mech) is None:
            error = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if error is None:
            deletes[d.name] = (d.name, mech)
        else:
            errors[d.name] = error
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletes.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
            continue
        mech = MECHANISMS.get(u.mechanism)
        error = _name_and_mechanism_error(u.name, mech)
        if error is None and u.iterations < SCRAM_MIN_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif error is None and u.iterations > SCRAM_MAX_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif error is None and not u.salted_password:
            # Kafka: its HMAC refuses the empty key (IllegalArgumentException), answered as an
            # unknown server error without a message; an empty salt alone is taken
            error = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        if error is None:
            stored_key, server_key = scram_keys(mech, bytes(u.salted_password))
            upserts[u.name] = (u.name, mech, (bytes(u.salt), stored_key, server_key, u.iterations))
        else:
            errors[u.name] = error
    if upserts or deletes:
        store.apply(list(upserts.values()), list(deletes.values()))
    ok = [{"user": n, "error_code": 0, "error_message": None} for n in list(deletes) + list(upserts)]
    return {"throttle_time_ms": 0,
            "results": ok + [{"user": n, "error_code": int(c), "error_message": m} for n, (c, m) in errors.items()]}


def _name_and_mechanism_error(name: str, mech: str | None):
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mech is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
