"""AlterUserScramCredentials (51): the client (kafka-configs.sh, Admin.alterUserScramCredentials)
sends a salt and the salted password; the broker keeps only RFC 5802's StoredKey and ServerKey,
durably (storage.security_store) before answering. Validation and messages as Kafka's
ScramControlManager."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from ..security.sasl import SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, scram_keys
from .describe_user_scram_credentials import MECHANISM_TYPES

API_KEY = 51
VERSIONS = (0, 0)
MECHANISMS = {v: k for k, v in MECHANISM_TYPES.items()}


async def handle(conn, header, req):
    store = conn.broker.scram_credentials
    if not conn.authorize(acl.ALTER, acl.CLUSTER, acl.CLUSTER_NAME):
        names = dict.fromkeys(x.name for x in list(req.deletions) + list(req.upsertions))
        return {"throttle_time_ms": 0, "results": [
            {"user": n, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "error_message": None} for n in names]}
    users: dict[str, tuple[int, str | None]] = {}  # user -> (error, message), in request order
    counts: dict[tuple[str, int], int] = {}  # a (user, mechanism) altered twice is refused
    for item in list(req.deletions) + list(req.upsertions):
        key = (item.name, item.mechanism)
        counts[key] = counts.get(key, 0) + 1
    upserts, deletes = [], []

    def fail(name, code, message):
        if not users.get(name, (0, None))[0]:
            users[name] = (int(code), message)

    for d in req.deletions:
        users.setdefault(d.name, (0, None))
        mech = MECHANISMS.get(d.mechanism)
        if not d.name:
            fail(d.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif counts[(d.name, d.mechanism)] > 1:
            fail(d.name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        elif mech is None:
            fail(d.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism.")
        elif store.lookup(d.name, mech) is None:
            fail(d.name, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletes.append((d.name, mech))
    for u in req.upsertions:
        users.setdefault(u.name, (0, None))
        mech = MECHANISMS.get(u.mechanism)
        if not u.name:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif counts[(u.name, u.mechanism)] > 1:
            fail(u.name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        elif mech is None:
            fail(u.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism.")
        elif u.iterations < SCRAM_MIN_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > SCRAM_MAX_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif not u.salt or not u.salted_password:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
        else:
            stored_key, server_key = scram_keys(mech, bytes(u.salted_password))
            upserts.append((u.name, mech, (bytes(u.salt), stored_key, server_key, u.iterations)))
    ok_users = {n for n, (code, _) in users.items() if not code}
    upserts = [x for x in upserts if x[0] in ok_users]
    deletes = [x for x in deletes if x[0] in ok_users]
    if upserts or deletes:
        store.apply(upserts, deletes)
    return {"throttle_time_ms": 0,
            "results": [{"user": n, "error_code": c, "error_message": m} for n, (c, m) in users.items()]}
