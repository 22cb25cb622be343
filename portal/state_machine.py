"""Moving a stateful row (quota request, node, ...): allowed moves listed in one place, written as
a conditional UPDATE.

`transition()` refuses a move its model's TRANSITIONS do not allow, and then writes it with
`UPDATE … WHERE pk = %s AND status = <source>`: when two workers race for the same move, the
database lets exactly one of them match, and the other gets InvalidTransition.
"""

from collections.abc import Mapping
from typing import Any

from django.db import models


class InvalidTransition(Exception):
    """A move the state machine does not allow, or one another worker made first."""

    def __init__(self, obj: models.Model, source: str, target: str, *, raced: bool = False):
        self.obj, self.source, self.target, self.raced = obj, source, target, raced
        label = obj._meta.verbose_name
        # str(): a choices member's repr is `QuotaRequestStatus.WITHDRAWN`, its str the value.
        source, target = str(source), str(target)
        if raced:
            message = f"{label} {obj.pk} is no longer {source}: someone else moved it first."
        else:
            message = f"{label} {obj.pk} cannot go from {source} to {target}."
        super().__init__(message)


def transition(
    obj: models.Model,
    *,
    target: str,
    transitions: Mapping[str, frozenset[str]],
    field: str = "status",
    **changes: Any,
) -> None:
    """Move `obj` to `target` (with `changes` written in the same UPDATE), or raise."""
    source = getattr(obj, field)
    if target not in transitions.get(source, frozenset()):
        raise InvalidTransition(obj, source, target)
    moved = (
        type(obj)
        ._default_manager.filter(pk=obj.pk, **{field: source})
        .update(**{field: target}, **changes)
    )
    if not moved:
        raise InvalidTransition(obj, source, target, raced=True)
    setattr(obj, field, target)
    for name, value in changes.items():
        setattr(obj, name, value)
