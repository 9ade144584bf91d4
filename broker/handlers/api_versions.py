"""ApiVersions (18): what we serve. Unsupported versions are answered in server.dispatch (KIP-511)."""
from . import api_versions_body

API_KEY = 18
VERSIONS = (0, 4)


async def handle(conn, header, req):
    return api_versions_body(conn.broker)
