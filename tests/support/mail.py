"""E-mail backends for tests: the mail server is a process boundary the suite cannot run."""

import threading
import time

from django.core.mail.backends.locmem import EmailBackend as LocMemBackend


class SlowBackend(LocMemBackend):
    """Django's test outbox, but each delivery takes a moment (a slow mail server)."""

    delay = 0.5
    lock = threading.Lock()

    def send_messages(self, messages):
        time.sleep(self.delay)
        with self.lock:
            return super().send_messages(messages)
