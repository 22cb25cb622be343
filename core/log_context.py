"""Each log line says which request it belongs to, and the request id follows the work a
request queued into Celery.

`RequestContextFilter` (on the console handler) adds `request_id`, `user` and `tenant` to every
record: the user only once the request has read it (signing in is never done for a log line),
the tenant once a page or an audit event named one. A task queued during a request carries the
request's id in its message headers (`portal_request_id`); the worker sets it around the task,
so the task's log lines and the audit events it writes carry the same id.
"""

from __future__ import annotations

import logging

from celery import signals
from django.utils.functional import empty

from .request_context import current_request, current_request_id, current_tenant

HEADER = "portal_request_id"


def _signed_in_user(request) -> str:
    if request is None:
        return ""
    user = request.__dict__.get("user")
    wrapped = getattr(user, "_wrapped", None)
    if user is None or wrapped is empty:  # not read by the request (yet)
        return ""
    if not getattr(user, "is_authenticated", False):
        return ""
    return user.get_username()


class RequestContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # Django logs a 4xx after the middleware has left, with the request on the record.
        request = getattr(record, "request", None) or current_request.get()
        record.request_id = getattr(request, "request_id", "") or current_request_id.get()
        try:
            record.user = _signed_in_user(request)
        except Exception:  # a log line never fails for its context
            record.user = ""
        record.tenant = getattr(request, "log_tenant", "") or current_tenant.get() or ""
        return True


def _add_request_id(headers=None, **kwargs) -> None:
    request_id = current_request_id.get()
    if request_id and headers is not None and HEADER not in headers:
        headers[HEADER] = request_id


def _enter_task(task=None, **kwargs) -> None:
    if task is None or task.request.is_eager:  # eager: already inside the request
        return
    current_request_id.set(task.request.get(HEADER) or "")
    current_tenant.set("")


def _leave_task(task=None, **kwargs) -> None:
    if task is None or task.request.is_eager:
        return
    current_request_id.set("")
    current_tenant.set(None)


def _task_logger_through_root(logger=None, **kwargs) -> None:
    # Celery gives its task logger a handler and format of its own: lines go through ours.
    if logger is not None:
        logger.handlers = []
        logger.propagate = True


def connect_celery_signals() -> None:
    signals.after_setup_task_logger.connect(
        _task_logger_through_root, weak=False, dispatch_uid="portal_task_logger"
    )
    signals.before_task_publish.connect(
        _add_request_id, weak=False, dispatch_uid="portal_request_id_publish"
    )
    signals.task_prerun.connect(_enter_task, weak=False, dispatch_uid="portal_request_id_enter")
    signals.task_postrun.connect(_leave_task, weak=False, dispatch_uid="portal_request_id_leave")
