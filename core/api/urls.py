"""Endpoints of portal's own infrastructure under /api/v1/."""

from .routers import PortalRouter
from .tokens import ApiTokenViewSet

router = PortalRouter()
router.register("tokens", ApiTokenViewSet, basename="token")

urlpatterns = router.urls
