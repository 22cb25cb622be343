"""Who may open finance's pages: finance staff and platform admins; anyone else gets 403."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from tenants.access import access_for


def finance_required(view: Callable) -> Callable:
    """Signed-in finance staff and platform admins only; anyone else gets 403."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not access_for(request.user).sees_all_tenants:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped
