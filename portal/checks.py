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
