"""The notebooks' sign-in client secret in a tenant's namespace: Envoy Gateway's OIDC filter
reads a confidential client's secret from a Secret in the namespace of the SecurityPolicy that
names it (each notebook's, in its tenant's namespace), so every tenant namespace holds a copy.

Pure, like the other builders; the value is an argument, never a field of the TenantSpec (whose
repr reaches logs). The reconcile applies it apart from the tenant's other objects: it is not
kept with what was applied, nor compared for drift (it is applied again on every reconcile).
"""

from __future__ import annotations

import base64

from .spec import Manifest, TenantSpec, object_meta

NOTEBOOK_OIDC_SECRET = "portal-notebook-oidc"  # noqa: S105 (a Secret's name, not a value)
CLIENT_SECRET_KEY = "client-secret"  # noqa: S105 (Envoy Gateway's key name)


def notebook_oidc_secret_manifest(spec: TenantSpec, client_secret: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(NOTEBOOK_OIDC_SECRET, spec),
        "type": "Opaque",
        # `data`, base64: not `stringData`, which the API server would echo in clear.
        "data": {CLIENT_SECRET_KEY: base64.b64encode(client_secret.encode()).decode("ascii")},
    }
