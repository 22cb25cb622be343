"""Billing's Celery tasks: thin interfaces that call one service each."""


# --- invoices and budgets (branch `inv`): imports inside, so this block stands on its own. --


def _inv_shared_task(function):
    from celery import shared_task

    return shared_task(acks_late=True)(function)


@_inv_shared_task
def invoices_month_end_task() -> int:
    """Beat, on the 1st: draft every tenant's invoice for the month just ended (safe to run
    again: drafts are recomputed, issued invoices left alone)."""
    from datetime import timedelta

    from django.utils import timezone

    from .services.invoicing import invoices_draft_month

    last_month = (timezone.now().replace(day=1) - timedelta(days=1)).date()
    return len(invoices_draft_month(month=last_month))


@_inv_shared_task
def budget_alerts_task() -> int:
    """Beat, hourly: tell tenants' owners their spend passed 80 or 100 % of the budget."""
    from django.utils import timezone

    from .services.budgets import budget_alerts_send

    return budget_alerts_send(now=timezone.now())
