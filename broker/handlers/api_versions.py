"""ApiVersions (18): what we serve, and from v3 the supported and finalized features
(broker/features.py). Unsupported versions are answered in server.dispatch (KIP-511).

v3+ carries the client's software name and version, which Kafka checks against KIP-511's
pattern (ApiVersionsRequest.isValid): either one broken (empty, a space, a leading or trailing
'-' or '.') is answered INVALID_REQUEST with no APIs and no features (recorded,
cluster_apis/api_versions/client_software)."""
import re

from minikafka.protocol.errors import ErrorCode
from . import api_versions_body


SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


async def handle(conn, header, req):
    if header.api_version >= 3 and not (SOFTWARE.fullmatch(req.client_software_name or "")
                                        and SOFTWARE.fullmatch(req.client_software_version or "")):
        return {"error_code": int(ErrorCode.INVALID_REQUEST), "api_keys": [], "throttle_time_ms": 0}
    return api_versions_body(conn.ctx, api_version=header.api_version)
