"""Django admin of the tenants app: each sub-domain registers its own ModelAdmins."""

from .dashboard import admin as dashboard_admin  # noqa: F401 - importing registers
from .quota import admin as quota_admin  # noqa: F401
from .workloads import admin as workloads_admin  # noqa: F401
