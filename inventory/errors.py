"""The inventory's own domain errors (the rest are core.errors': RuleViolation,
InvalidTransition)."""

from core.errors import RuleViolation


class ReasonRequired(RuleViolation):
    """Every lifecycle move is audited with a reason; an empty one is refused."""

    def __init__(self) -> None:
        super().__init__("Say why: every lifecycle move is recorded with its reason.")
