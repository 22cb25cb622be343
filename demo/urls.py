"""The simulated fleet's own URLs, mounted by portal/urls.py only when it is the configured
fleet (by name: production code never imports the demo)."""

from django.conf import settings
from django.urls import re_path

from .gateway import simulated_gateway

urlpatterns = [
    re_path(rf"^{settings.SIMULATED_GATEWAY_PATH}/(?P<hostname>[a-z0-9.-]+)/(?P<path>.*)$",
            simulated_gateway, name="simulated-gateway"),
]
