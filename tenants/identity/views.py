"""Pages of the Keycloak sign-in: start it, take the callback, and say what went wrong.

mozilla-django-oidc does the protocol; these subclasses read the endpoints per request (from
cached discovery) and turn every failure into a page that says what happened (never a 500),
with no session left behind.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib import auth
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from core.openid import ProviderUnavailable, oidc_enabled, provider_endpoints

from .oidc import SignInRejected, failure_url

logger = logging.getLogger(__name__)

# Errors a provider returns to prompt=none when its session is gone (user signed out, disabled).
SESSION_ENDED_ERRORS = {"login_required", "interaction_required", "consent_required"}


@dataclass(frozen=True)
class Failure:
    title: str
    detail: str
    status: int = 403


_UNVERIFIED = "The sign-in answer from Keycloak could not be verified: "
FAILURES = {
    "state": Failure(
        "This sign-in has expired",
        "The sign-in attempt is unknown or was already used — for example after going back in "
        "the browser, or in a second tab. Start again.",
        400,
    ),
    "code": Failure(
        "Keycloak did not accept the sign-in",
        "The sign-in code was already used or has expired. Start again.",
        400,
    ),
    "token-expired": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "its ID token has expired. If this keeps happening, the clocks of the "
        "portal and Keycloak disagree.",
    ),
    "token-not-yet-valid": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "its ID token is not valid yet. The clocks of the portal and Keycloak "
        "disagree; tell the platform team.",
    ),
    "token-audience": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "its ID token was issued to another application.",
    ),
    "token-issuer": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "its ID token comes from an identity provider the portal does not trust.",
    ),
    "token-signature": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "the signature of its ID token does not match Keycloak's keys.",
    ),
    "token-nonce": Failure(
        "The sign-in could not be verified",
        _UNVERIFIED + "its ID token belongs to another sign-in attempt.",
    ),
    "token-type": Failure(
        "The sign-in could not be verified", _UNVERIFIED + "it is not an ID token."
    ),
    "token-malformed": Failure(
        "The sign-in could not be verified", _UNVERIFIED + "its ID token is malformed."
    ),
    "claims": Failure(
        "The sign-in could not be verified",
        "Keycloak's answer does not say consistently who you are.",
    ),
    "provider-down": Failure(
        "Keycloak is unavailable",
        "The portal cannot reach Keycloak right now. Try again in a few minutes; if it persists, "
        "tell the platform team.",
        503,
    ),
    "provider-refused": Failure(
        "Keycloak refused the sign-in",
        "Keycloak did not sign you in to the portal. Try again, or ask the platform team.",
    ),
    "session-ended": Failure(
        "Your Keycloak session has ended",
        "You were signed out of Keycloak, your session there timed out, or your account there "
        "was disabled. Sign in again.",
        401,
    ),
    "account-disabled": Failure(
        "Your portal account is disabled",
        "Keycloak signed you in, but your account in the portal is disabled. Ask the platform "
        "team.",
    ),
}
UNKNOWN_FAILURE = Failure("Sign-in failed", "The sign-in did not complete. Start again.", 400)


def sign_in_failed(request):
    """Where a failed Keycloak sign-in lands: what happened, and a way to start again."""
    reason = request.GET.get("reason", "")
    failure = FAILURES.get(reason, UNKNOWN_FAILURE)
    context = {
        "failure": failure,
        "reason": reason if reason in FAILURES else "unknown",
        "oidc_enabled": oidc_enabled(),
    }
    return render(request, "registration/sign_in_failed.html", context, status=failure.status)


class KeycloakSignInView(OIDCAuthenticationRequestView):
    """Sends the browser to Keycloak (state, nonce and PKCE kept in the session)."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # endpoints are read per request, in get()

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in with Keycloak is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_endpoints().authorization_endpoint
        except ProviderUnavailable as exc:
            logger.warning("Keycloak unreachable at sign-in: %s", exc)
            return HttpResponseRedirect(failure_url("provider-down"))
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class KeycloakCallbackView(OIDCAuthenticationCallbackView):
    """Keycloak's redirect back: exchange the code, validate, sign in — or say why not."""

    reason = "state"

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in with Keycloak is not configured.")
        error = request.GET.get("error")
        if error:
            self.reason = "session-ended" if error in SESSION_ENDED_ERRORS else "provider-refused"
            logger.info("Keycloak answered the sign-in with error %r", error)
        try:
            return super().get(request)
        except SuspiciousOperation as exc:  # a state this session never issued
            logger.warning("Keycloak sign-in rejected: %s", exc)
            self.reason = "state"
        except SignInRejected as exc:
            logger.warning("Keycloak sign-in rejected (%s): %s", exc.reason, exc)
            self.reason = exc.reason
        except ProviderUnavailable as exc:
            logger.warning("Keycloak unreachable during sign-in: %s", exc)
            self.reason = "provider-down"
        return self.login_failure()

    def login_failure(self):
        user = getattr(self, "user", None)
        if user is not None and not user.is_active:
            self.reason = "account-disabled"
        # A failed silent refresh ends the portal session too (fail closed). A foreign state
        # does not: anyone can send a browser to the callback with one.
        if self.reason != "state" and self.request.user.is_authenticated:
            auth.logout(self.request)
        return HttpResponseRedirect(failure_url(self.reason))
