"""Endpoints of portal's own infrastructure under /api/v1/."""

from rest_framework.routers import SimpleRouter

from .tokens import ApiTokenViewSet

router = SimpleRouter()
router.register("tokens", ApiTokenViewSet, basename="token")

urlpatterns = router.urls
