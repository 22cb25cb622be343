"""Moving a stateful row (quota request, node, ...): allowed moves listed in one place, written as
a conditional UPDATE.

`transition()` refuses a move its model's TRANSITIONS do not allow, and then writes it with
`UPDATE … WHERE pk = %s AND status = <source>`: when two workers race for the same move, the
database lets exactly one of them match, and the other gets InvalidTransition.
"""

from collections.abc import Mapping
from typing import Any

from django.db import models

from .errors import InvalidTransition

__all__ = ["InvalidTransition", "transition"]


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
