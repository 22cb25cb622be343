"""The portal's one set of domain errors, mapped once to API answers and once to page messages.

Services raise these (and Django's ValidationError for bad fields); views, viewsets and admin
actions never translate them themselves:

- `core.api.errors.exception_handler` answers the API's JSON error with `status` and `code`
  (400 for a rule the request breaks, 409 for a move the state machine refuses or a race lost);
- `core.middleware.DomainErrorMiddleware` turns one raised from a page into a message on the
  page the person came from.

Every message is safe to show to the person who asked: it names their object, never internals.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A request the domain's rules refuse."""

    status = 400
    code = "rule"


class RuleViolation(DomainError):
    """The request breaks a rule: what it asks is not allowed as it stands (400)."""


class Conflict(DomainError):
    """The object changed under the request (someone else acted first): reload it (409)."""

    status = 409
    code = "conflict"


class InvalidTransition(Conflict):
    """A move the state machine does not allow, or one another worker made first (409)."""

    code = "invalid_transition"

    def __init__(
        self, obj: Any, source: str, target: str, *, raced: bool = False, why: str = ""
    ) -> None:
        self.obj, self.source, self.target, self.raced, self.why = obj, source, target, raced, why
        # str(): a choices member's repr is `QuotaRequestStatus.WITHDRAWN`, its str the value.
        source, target = str(source), str(target)
        if raced:
            message = f"{_name(obj)} is no longer {source}: someone else moved it first."
        else:
            message = f"{_name(obj)} cannot go from {source} to {target}"
            message += f": {why}." if why else "."
        super().__init__(message)


def _name(obj: Any) -> str:
    """How a message names the object: its own name (a node's hostname), else kind and number."""
    meta = getattr(obj, "_meta", None)
    text = str(obj)
    if meta is not None and text.startswith(f"{meta.object_name} object"):
        return f"{meta.verbose_name} {obj.pk}"
    return text


class Unavailable(DomainError):
    """Something the request needs (the cluster, Prometheus) does not answer now: try again."""

    status = 503
    code = "unavailable"
