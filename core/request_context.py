"""What the current request (or the task it queued) is about, so that audit events and log
lines can be tied to it: its id, the request itself (for the user, once signed in) and the
tenant, once a page or a decision names one."""

from contextvars import ContextVar
from typing import Any

current_request_id: ContextVar[str] = ContextVar("current_request_id", default="")
current_request: ContextVar[Any] = ContextVar("current_request", default=None)
# None outside a request or a task: a command or a test naming tenants leaves nothing behind.
current_tenant: ContextVar[str | None] = ContextVar("current_tenant", default=None)


def note_tenant(slug: str) -> None:
    """The tenant this request (or task) is about, for its later log lines."""
    if slug and current_tenant.get() is not None:
        current_tenant.set(slug)
        request = current_request.get()
        if request is not None:
            request.log_tenant = slug  # for what Django logs once the request is answered
