"""ApiVersions (18): what we serve, and from v3 the supported and finalized features
(broker/features.py). Unsupported versions are answered in server.dispatch (KIP-511)."""
from . import api_versions_body

API_KEY = 18
VERSIONS = (0, 4)


async def handle(conn, header, req):
    return api_versions_body(conn.broker, api_version=header.api_version)
