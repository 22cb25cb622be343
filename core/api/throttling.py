"""The API's throttles: per signed-in user, and per anonymous client address.

DRF's own classes read their rates once, when imported; these read the settings on every
request, so a changed rate (and a test's) applies at once. Throttled requests get the API's JSON
error with status 429 and a Retry-After header.
"""

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class PortalAnonThrottle(AnonRateThrottle):
    def get_rate(self) -> str | None:
        return settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["anon"]


class PortalUserThrottle(UserRateThrottle):
    def get_rate(self) -> str | None:
        return settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"]
