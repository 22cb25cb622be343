"""The inventory's domain errors: what a caller did that the fleet's rules refuse."""


class InventoryError(Exception):
    """A request the inventory refuses; the message is safe to show to an admin."""


class InvalidTransition(InventoryError):
    """A lifecycle move the state machine does not allow, or one another worker made first."""

    def __init__(self, *, node, source: str, target: str, why: str = "") -> None:
        self.node, self.source, self.target, self.why = node, source, target, why
        message = f"{node} cannot go from {source} to {target}"
        super().__init__(f"{message}: {why}." if why else f"{message}.")


class ReasonRequired(InventoryError):
    """Every lifecycle move is audited with a reason; an empty one is refused."""

    def __init__(self) -> None:
        super().__init__("Say why: every lifecycle move is recorded with its reason.")
