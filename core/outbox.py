"""Mail the portal owes people: written in the caller's transaction, sent after commit, kept
until the mail server takes it.

`email_enqueue` stores the message beside the decision it reports (so one commits only with
the other) and queues its sending once the transaction commits. `outbox_send` claims one unsent
message with a row lock (`SKIP LOCKED`: two workers never send the same one at once), sends it
and marks it sent; a refusal is recorded with the next try's time (backoff up to an hour).
`outbox_sweep`, run by beat and when a worker starts, sends whatever is due: messages whose
task never reached the broker, or whose earlier tries failed.

Delivery is at least once: a worker killed between the mail server's answer and the commit
sends that one message again on the next try.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.utils import timezone

from . import queueing
from .models import OutboxEmail

logger = logging.getLogger(__name__)

SEND_TASK = "portal.tasks.outbox_send_task"
MAX_BACKOFF = timedelta(hours=1)
MAX_ERROR_LENGTH = 1000


def email_enqueue(*, to: Iterable[str], subject: str, body: str, topic: str) -> OutboxEmail | None:
    """Keep an e-mail to `to` for sending after the current transaction commits.

    Returns None (and keeps nothing) when nobody is addressed.
    """
    recipients = sorted({address.strip() for address in to if address and address.strip()})
    if not recipients:
        return None
    email = OutboxEmail.objects.create(
        topic=topic, to=recipients, subject=subject[:300].replace("\n", " "), body=body
    )
    queueing.enqueue_on_commit(SEND_TASK, email.pk)
    return email


def _backoff(attempts: int) -> timedelta:
    return min(MAX_BACKOFF, timedelta(seconds=30 * 2 ** max(0, attempts - 1)))


def outbox_send(*, email_id: int) -> bool:
    """Send one unsent message if it is due; True when the mail server took it."""
    with transaction.atomic():
        email = (
            OutboxEmail.objects.select_for_update(skip_locked=True)
            .filter(pk=email_id, sent_at__isnull=True)
            .first()
        )
        if email is None:
            return False  # sent already, or another worker is sending it right now
        message = EmailMessage(
            subject=email.subject,
            body=email.body,
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=email.to,
        )
        email.attempts += 1
        try:
            get_connection(fail_silently=False).send_messages([message])
        except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
            email.last_error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_LENGTH]
            email.next_attempt_at = timezone.now() + _backoff(email.attempts)
            email.save(update_fields=["attempts", "last_error", "next_attempt_at"])
            logger.warning("Mail %s to %s refused: %s", email.pk, email.to, email.last_error)
            return False
        email.sent_at, email.last_error = timezone.now(), ""
        email.save(update_fields=["attempts", "sent_at", "last_error"])
        return True


def outbox_due(*, limit: int = 500) -> list[int]:
    return list(
        OutboxEmail.objects.filter(sent_at__isnull=True, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )


def outbox_sweep(*, limit: int = 500) -> int:
    """Send every message that is due (each in its own transaction); returns how many went."""
    return sum(outbox_send(email_id=pk) for pk in outbox_due(limit=limit))
