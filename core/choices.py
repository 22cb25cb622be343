"""States shown to people: every choice set of a state carries its colour, in one shape.

    @colored({Status.READY: "success", Status.FAILED: "danger", ...})
    class Status(ColoredChoices): ...

    Status.color("ready")   # "success": a Bootstrap contextual colour, for badges and bars

Every member must have a colour (checked when the class is made), so a new state cannot reach
a page without one. Django admin has no Bootstrap: `BADGE_HEX` gives it the same colours, each
dark enough for its badge's white text (at least 4.5:1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from django.db import models
from django.utils.html import format_html

BADGE_HEX = {
    "primary": "#5b3cc4",
    "info": "#087990",
    "success": "#198754",
    "warning": "#946c00",
    "danger": "#dc3545",
    "secondary": "#6c757d",
    "light": "#6f777f",
    "dark": "#343a40",
}

C = TypeVar("C", bound=type["ColoredChoices"])


class ColoredChoices(models.TextChoices):
    """A TextChoices whose members each have a colour (see `colored`)."""

    @classmethod
    def color(cls, value: str) -> str:
        return cls._state_colors[cls(value)]


def colored(colors: Mapping[str, str]) -> Callable[[C], C]:
    """Attach `colors` (member → Bootstrap colour) to a ColoredChoices; every member needs one."""

    def attach(choices: C) -> C:
        missing = [m.value for m in choices if m not in colors]
        unknown = [c for c in colors.values() if c not in BADGE_HEX]
        if missing or unknown:
            raise TypeError(f"{choices.__name__}: no colour for {missing}, unknown {unknown}")
        choices._state_colors = {choices(k): v for k, v in colors.items()}
        return choices

    return attach


def admin_badge(*, value: str, label: str, color: str):
    """The badge Django admin's lists show for a state (the pages use Bootstrap's)."""
    return format_html(
        '<span class="status-{}" style="color:#fff;background:{};padding:1px 6px;'
        'border-radius:4px;white-space:nowrap">{}</span>',
        value,
        BADGE_HEX[color],
        label,
    )
