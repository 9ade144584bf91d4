"""DescribeUserScramCredentials (50): the SCRAM mechanisms and iterations of users (never a
salt or key), as Kafka's ControllerApis / ScramControlManager.describeScramCredentials."""
from minikafka.protocol.errors import ErrorCode

MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # Kafka's ScramMechanism type ids


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """Kafka (recorded): the error at the top and once per requested user, its name left empty."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": None,
            "results": [{"user": "", "error_code": int(code), "error_message": None, "credential_infos": []}
                        for _ in req.users or ()]}


async def handle(conn, header, req):
    store = conn.ctx.scram_credentials
    names = sorted(store.users) if req.users is None else [u.name for u in req.users]
    seen, results = set(), []
    for name in names:
        if name in seen:
            continue
        if req.users is not None and sum(1 for u in req.users if u.name == name) > 1:
            code, message = ErrorCode.DUPLICATE_RESOURCE, f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
        elif name not in store.users:
            code, message = ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {name}"
        else:
            code, message = None, ""   # Kafka answers an empty message, not none
        seen.add(name)
        infos = [] if code else [{"mechanism": MECHANISM_TYPES[m], "iterations": c[3]}
                                 for m, c in sorted(store.users[name].items())]
        results.append({"user": name, "error_code": int(code or 0), "error_message": message,
                        "credential_infos": infos})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "results": results}
