"""The cluster status of a tenant: an htmx partial that polls while the cluster lags."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from ..access.rules import tenant_get_for_user


@login_required
def cluster_status(request, slug: str):
    """The htmx partial: applied on the cluster at …, applying, or the cluster's error.

    It polls itself while the cluster lags the database and stops once they agree.
    """
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    return render(request, "tenants/_cluster_status.html", {"tenant": tenant})
