"""The errors billing's calculations raise: all are `ValueError`s, so bad input answers 4xx."""


class BillingError(ValueError):
    """Input that billing cannot price or credit; the message says what to fix."""


class RateCardError(BillingError):
    """A rate card that would price some usage twice, below zero, or not at all.

    `problems` lists every fault found, so an admin fixes the card in one go.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("Invalid rate card: " + "; ".join(self.problems))


class CreditNoteError(BillingError):
    """A credit note that would credit nothing, or more than is left of its invoice."""
