from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerView
from mozilla_django_oidc.views import OIDCLogoutView

from tenants.identity.views import sign_in_failed

from . import account, ops, views
from .api.schema import SchemaView

api_v1 = [
    path("", include("portal.api.urls")),
    path("", include("tenants.api.urls")),
    path("", include("inventory.api_urls")),
    path("", include("billing.api_urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("no-access/", views.no_access, name="no-access"),
    path("accounts/login/", account.PortalLoginView.as_view(), name="login"),
    path("accounts/login/failed/", sign_in_failed, name="oidc-failed"),
    # Signing out of a Keycloak session signs out of Keycloak too (RP-initiated logout).
    path("accounts/logout/", OIDCLogoutView.as_view(), name="logout"),
    path("account/tokens/", account.api_tokens, name="api-tokens"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        account.api_token_revoke_view,
        name="api-token-revoke",
    ),
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("", include("tenants.urls")),
    path("fleet/", include("inventory.urls")),
    path("billing/", include("billing.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    # Last: any other URL under /api/ is the API's JSON 404, whatever DEBUG says.
    re_path(r"^api/(?P<path>.*)$", views.api_not_found, name="api-not-found"),
]

handler400 = "portal.views.handler400"
handler403 = "portal.views.handler403"
handler404 = "portal.views.handler404"
handler500 = "portal.views.handler500"
