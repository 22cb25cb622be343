"""Who may see which fleet page: platform admins everything; anyone with a role, capacity."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from ..tenancy import tenant_directory


def platform_admin_required(view: Callable) -> Callable:
    """Signed-in platform admins only; anyone else gets 403 (hardware details stay private)."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not tenant_directory().is_platform_admin(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped


def any_role_required(view: Callable) -> Callable:
    """Signed-in users holding any role (tenant member, finance, admin): capacity summaries."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not tenant_directory().has_any_role(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped
