"""What every command starts from: the stored configuration, a client signed in as the stored
(or PORTALCTL_TOKEN's) credentials, and one way errors leave: the message, the exit code.

Stored credentials go only to the portal they were given for: with PORTALCTL_SERVER (or a
config) naming another, a command refuses (exit 4) rather than send them there."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.text import Text

from .auth import fresh
from .client import Client
from .config import Config, Credentials
from .exits import CliError, Exit
from .output import stderr

F = TypeVar("F", bound=Callable[..., Any])


def signed_in() -> tuple[Config, Client]:
    config = Config.load()
    server = config.require_server()
    credentials = Credentials.load()
    if credentials is None:
        raise CliError("Not signed in: run portalctl login (or set PORTALCTL_TOKEN).", Exit.AUTH)
    credentials.check_server(server)
    return config, Client(server, lambda: fresh(credentials, config.client_id).access_token)


def print_error(error: CliError) -> None:
    console = stderr()
    # Styled prefix only: the message is the API's (or a file's) text, printed as it is.
    console.print(Text.assemble(("Error:", "bold red"), " ", str(error)), highlight=False)
    for field, problems in error.fields.items():
        text = "; ".join(str(p) for p in problems) if isinstance(problems, list) else problems
        console.print(f"  {field}: {text}", markup=False, highlight=False)


def command(function: F) -> F:
    """A command whose CliError is printed (the API's own message) and becomes its exit code."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except CliError as error:
            print_error(error)
            raise typer.Exit(int(error.code)) from error

    return run  # type: ignore[return-value]
