"""Tenants' REST API (thin DRF views over access rules and selectors)."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .access import access_for
from .models import Tenant
from .serializers import MeSerializer


class MeView(APIView):
    """The signed-in user, their platform roles and their tenant memberships."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        memberships = user.memberships.filter(tenant__status=Tenant.Status.ACTIVE).select_related(
            "tenant"
        )
        data = {
            "id": user.pk,
            "username": user.get_username(),
            "get_full_name": user.get_full_name(),
            "email": user.email,
            "roles": access_for(user).roles,
            "tenants": memberships,
        }
        return Response(MeSerializer(data).data)
