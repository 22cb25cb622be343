import importlib.util

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerView
from mozilla_django_oidc.views import OIDCLogoutView

from core import account, ops
from core.api.index import ApiIndexView
from core.api.schema import SchemaView
from inventory import urls as inventory_urls
from tenants.identity.views import sign_in_failed

from . import pages, views

fleet_pages = [
    path("", pages.fleet_overview, name="fleet"),
    path("capacity/", pages.capacity_summary, name="capacity"),
    path("holdings/", pages.fleet_holdings, name="holdings"),
]

api_v1 = [
    path("", ApiIndexView.as_view(), name="index"),
    path("", include("core.api.urls")),
    path("", include("tenants.api.urls")),
    path("", include("inventory.api.urls")),
    path("", include("billing.api.urls")),
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
    # The prefixed groups come before the tenants' pages, which have none: resolving an admin
    # or API path (and each admin row's link) does not try every tenant page first.
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # The fleet overview and capacity summary are composed here (inventory + tenants' grants),
    # named in the inventory's namespace with its other pages.
    path("fleet/", include((fleet_pages + inventory_urls.urlpatterns, "inventory"))),
    path("billing/", include("billing.urls")),
    path("favicon.ico", views.favicon, name="favicon"),
    path(".well-known/portalctl.json", views.cli_discovery, name="cli-discovery"),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    path("", include("tenants.urls")),
    # Last: any other URL under /api/ is the API's JSON 404, whatever DEBUG says.
    re_path(r"^api/(?P<path>.*)$", views.api_not_found, name="api-not-found"),
]

if settings.FLEET_BACKEND == "simulated" and importlib.util.find_spec("demo") is not None:
    # The simulated fleet's stand-in for the gateway that serves inference endpoints (the
    # image holds no demo package: there, only a real fleet's gateway serves them).
    urlpatterns.insert(-2, path("", include("demo.urls")))

handler400 = "portal.views.handler400"
handler403 = "portal.views.handler403"
handler404 = "portal.views.handler404"
handler500 = "portal.views.handler500"
