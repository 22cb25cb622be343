"""Exit codes scripts can rely on (docs/cli.md lists them)."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    ERROR = 1  # anything else: the server failed (5xx), an unexpected answer
    USAGE = 2  # the command line is wrong (Click's own code for usage errors)
    NOT_FOUND = 3  # no such tenant, workload or invoice (or another tenant's)
    AUTH = 4  # not signed in (or to another portal), the token is refused (401), the role does
    # not allow it (403), the sign-in was refused
    TIMEOUT = 5  # `wait` gave up before the workload got there; the sign-in code expired
    REFUSED = 6  # the portal refused the request: invalid fields (400), a conflict (409)
    FAILED = 7  # `wait`: the workload failed
    UNREACHABLE = 8  # the portal (or the identity provider) could not be reached


class CliError(Exception):
    """An error to print (its message) and exit with (its code)."""

    def __init__(self, message: str, code: Exit = Exit.ERROR, *,
                 fields: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.fields = fields or {}


# The API's HTTP status -> the exit code a script sees.
STATUS_EXITS = {
    400: Exit.REFUSED,
    401: Exit.AUTH,
    403: Exit.AUTH,
    404: Exit.NOT_FOUND,
    409: Exit.REFUSED,
    413: Exit.REFUSED,
    415: Exit.REFUSED,
    429: Exit.REFUSED,
}


def exit_for_status(status: int) -> Exit:
    return STATUS_EXITS.get(status, Exit.ERROR)
