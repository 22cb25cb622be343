"""The portal's URLs and the benchmark's floor page."""

from django.urls import path

from portal.urls import handler400, handler403, handler404, handler500, urlpatterns

from .views import floor

urlpatterns = [path("bench/floor/", floor, name="bench-floor"), *urlpatterns]

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
