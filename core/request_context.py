"""The current request's id, so audit events and logs can be tied to one request."""

from contextvars import ContextVar

current_request_id: ContextVar[str] = ContextVar("current_request_id", default="")
