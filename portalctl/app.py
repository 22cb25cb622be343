"""The portalctl command tree: sign-in and identity here, the rest in one module per area."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from . import __version__, auth
from .client import Client
from .commands_billing import invoices_app
from .commands_tenants import quota, spend, tenants_app
from .commands_workloads import kubeconfig, workloads_app
from .config import DEFAULT_CLIENT_ID, Config, Credentials
from .exits import CliError, Exit
from .output import Format, OutputOption, emit, say, stderr
from .session import command, signed_in

app = typer.Typer(
    name="portalctl",
    help="The AI Factory Portal from the command line: tenants, quota, spend, workloads, "
    "kubeconfigs and invoices. Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 not signed "
    "in or not allowed, 5 timeout, 6 refused by the portal, 7 workload failed, 8 unreachable.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

ME_COLUMNS = ("server", "username", "name", "email", "roles", "tenants", "current_tenant")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"portalctl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """portalctl: the AI Factory Portal's command-line client."""


def _me(config: Config, client: Client) -> dict[str, Any]:
    me = client.call("me")
    return {
        "server": config.server,
        "username": me["username"],
        "name": me["name"],
        "email": me["email"],
        "roles": me["roles"],
        "tenants": {t["slug"]: t["role"] for t in me["tenants"]},
        "current_tenant": config.tenant or None,
    }


def _show_code(grant: dict[str, Any]) -> None:
    console = stderr()
    console.print("To sign in, open this page in a browser:", highlight=False)
    console.print(f"  {grant.get('verification_uri_complete') or grant['verification_uri']}",
                  highlight=False, markup=False)
    console.print(f"and check that it shows the code {grant['user_code']}.", highlight=False,
                  markup=False)


@app.command()
@command
def login(
    server: Annotated[str, typer.Option(help="The portal's URL (kept for next time).",
                                        envvar="PORTALCTL_SERVER")] = "",
    issuer: Annotated[str, typer.Option(
        help="The Keycloak realm's issuer URL, e.g. https://sso.example.com/realms/ai-factory "
        "(kept for next time; by default the one the portal names).",
        envvar="PORTALCTL_ISSUER")] = "",
    client_id: Annotated[str, typer.Option(help="The identity provider's public client for "
                                           "the CLI.")] = "",
    token: Annotated[str, typer.Option(help="Use this API token (afp_...) or access token "
                                       "instead of signing in in a browser.")] = "",
    output: OutputOption = Format.table,
) -> None:
    """Sign in: Keycloak's device authorization grant (open a link, confirm the code), or a
    token given with --token. Credentials are kept mode 0600 in the config folder."""
    config = Config.load(environment=False)  # --server is PORTALCTL_SERVER already
    previous = config.server
    config.server = (server or config.server).rstrip("/")
    if config.server != previous:  # another portal: its own issuer, client and tenants
        config.issuer, config.client_id, config.tenant = "", "", ""
    config.issuer = (issuer or config.issuer).rstrip("/")
    config.client_id = client_id or config.client_id or DEFAULT_CLIENT_ID
    config.require_server()
    if token:
        credentials = Credentials(access_token=token.strip(), kind="token", server=config.server)
    else:
        if not config.issuer:  # the portal says where its people sign in
            found = auth.portal_sign_in(config.server)
            config.issuer = str(found.get("issuer") or "").rstrip("/")
            config.client_id = client_id or str(found.get("client_id") or config.client_id)
        if not config.issuer:
            raise CliError(f"{config.server} has no sign-in provider: use --token with an API "
                           f"token made in the portal.", Exit.USAGE)
        waiting = stderr().status("Waiting for you to sign in in the browser…")

        def show(grant: dict[str, Any]) -> None:
            _show_code(grant)
            waiting.start()

        try:
            credentials = auth.device_sign_in(issuer=config.issuer, client_id=config.client_id,
                                              show=show)
        finally:
            waiting.stop()
        credentials.server = config.server
    me = _me(config, Client(config.server, credentials.access_token))
    config.save()
    credentials.save()
    say(f"Signed in to {config.server} as {me['username']}.")
    emit(me, output, columns=ME_COLUMNS)


@app.command()
@command
def logout(output: OutputOption = Format.table) -> None:
    """Forget the stored credentials (and revoke a Keycloak sign-in's tokens)."""
    try:
        client_id = Config.load().client_id
        credentials = Credentials.load()
    except CliError:  # an unreadable file: nothing to revoke, still forgotten
        credentials = None
    if credentials is not None and credentials.kind == "oidc":
        auth.revoke(credentials, client_id)
    forgotten = Credentials.forget()
    say("Signed out." if forgotten else "Not signed in.")
    emit({"signed_out": forgotten}, output)


@app.command()
@command
def whoami(output: OutputOption = Format.table) -> None:
    """Who the portal sees: your name, roles, tenants and the current tenant."""
    config, client = signed_in()
    emit(_me(config, client), output, columns=ME_COLUMNS)


# After sign-in in the help's list: the areas, then the tenant's figures and the kubeconfig.
app.add_typer(tenants_app, name="tenants")
app.add_typer(workloads_app, name="workloads")
app.add_typer(invoices_app, name="invoices")
app.command()(quota)
app.command()(spend)
app.command()(kubeconfig)
