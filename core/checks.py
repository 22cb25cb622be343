"""Deployment checks of the portal's own (`manage.py check --deploy`)."""

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.caches, deploy=True)
def throttles_count_across_workers(app_configs, **kwargs) -> list[checks.CheckMessage]:
    backend = settings.CACHES["default"]["BACKEND"]
    if backend.endswith("LocMemCache") or backend.endswith("DummyCache"):
        return [
            checks.Warning(
                "The cache is local to each process: every web worker counts the API's "
                "throttles on its own.",
                hint="Set CACHE_URL to a shared cache, e.g. rediscache://redis:6379/2.",
                id="portal.W001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def keycloak_directory_sync_configured(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """Signing in with Keycloak, the portal must also hear when someone leaves it: without the
    directory client, a user removed, disabled or stripped of a role in Keycloak keeps their
    access through personal API tokens."""
    if settings.OIDC_ISSUER_URL and not settings.KEYCLOAK_DIRECTORY_CLIENT_ID:
        return [
            checks.Warning(
                "Keycloak signs people in, but the directory sync is off: someone removed or "
                "disabled in Keycloak keeps their access through personal API tokens.",
                hint="Set KEYCLOAK_DIRECTORY_CLIENT_ID and KEYCLOAK_DIRECTORY_CLIENT_SECRET "
                "(the realm export's portal-directory client; docs/keycloak.md).",
                id="portal.W002",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def sealing_keys_set(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """What the portal seals at rest (core/sealed.py) must not hang on SECRET_KEY alone."""
    if not [key for key in settings.SEALING_KEYS if key.strip()]:
        return [
            checks.Error(
                "SEALING_KEYS is empty: secrets sealed at rest would use a key derived from "
                "SECRET_KEY.",
                hint="Set SEALING_KEYS to one or more Fernet keys (docs/configuration.md).",
                id="portal.E001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def notebook_sign_in_configured(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """Notebooks published through the gateway sign in with Keycloak's notebook client: without
    its secret in the tenants' namespaces, the gateway cannot sign anyone in and no notebook
    opens from outside."""
    if (settings.NOTEBOOK_DOMAIN and settings.OIDC_ISSUER_URL
            and not settings.NOTEBOOK_OIDC_CLIENT_SECRET):
        return [
            checks.Warning(
                "Notebooks are published at NOTEBOOK_DOMAIN behind Keycloak sign-in, but "
                "NOTEBOOK_OIDC_CLIENT_SECRET is empty: the gateway cannot sign anyone in to them.",
                hint="Set NOTEBOOK_OIDC_CLIENT_SECRET to the secret of the NOTEBOOK_OIDC_CLIENT_ID "
                "client (docs/keycloak.md), or unset NOTEBOOK_DOMAIN.",
                id="portal.W003",
            )
        ]
    return []
