"""Logging filters of the portal's own (settings.LOGGING)."""

import logging


class ForbiddenInOneLine(logging.Filter):
    """A refused request (403) is logged as the one line that says so: Django logs it with the
    PermissionDenied's traceback, which says nothing an operator needs and buries the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403 and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True
