"""portalctl: the AI Factory Portal's command-line client.

It talks to the portal's public REST API (/api/v1/) over HTTP only and imports nothing of the
portal's own code (an import-linter contract in pyproject.toml keeps it so). The operations and
fields it uses are declared in `portalctl.operations`, checked against the portal's OpenAPI
schema by the test suite.
"""

__version__ = "0.1.0"
