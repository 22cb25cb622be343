from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django_prometheus.exports import ExportToDjangoView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import ops, views

api_v1 = [
    path("", include("portal.api.urls")),
    path("", include("tenants.api_urls")),
    path("", include("inventory.api_urls")),
    path("", include("billing.api_urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("no-access/", views.no_access, name="no-access"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("tenants.urls")),
    path("fleet/", include("inventory.urls")),
    path("billing/", include("billing.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ExportToDjangoView, name="metrics"),
]

handler404 = "portal.views.handler404"
handler500 = "portal.views.handler500"
