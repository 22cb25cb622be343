"""The confirmation step of destructive page actions, one that works without JavaScript.

A destructive action's first POST carries no `confirm` field: the view answers a page that
names the object, says what the action does, and repeats the POST with `confirm` set. The view
acts only when `confirm` names the object, so neither a stray Enter, a double click nor a
forged form skips the step. For the worst actions the person types the name themselves.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class Choice:
    """A question the confirmation asks besides yes or no (how long a rotated key keeps
    working): a select, its answer sent with the confirmed POST as `field`."""

    field: str
    label: str
    options: Sequence[tuple[str, str]]  # (value, label)
    initial: str


def is_confirmed(request: HttpRequest, *, name: str) -> bool:
    return request.POST.get(CONFIRM_FIELD, "").strip() == name


def confirmation_page(
    request: HttpRequest,
    *,
    name: str,
    title: str,
    consequences: Iterable[str],
    submit_label: str,
    cancel_url: str,
    keep: Iterable[str] = (),
    type_name: bool = False,
    danger: bool = True,
    choice: Choice | None = None,
) -> HttpResponse:
    """The page that asks; `keep` names the POST fields carried into the confirmed POST,
    `choice` a select it adds."""
    attempted = CONFIRM_FIELD in request.POST
    hidden = [(field, value) for field in keep for value in request.POST.getlist(field)]
    context = {
        "name": name,
        "title": title,
        "consequences": list(consequences),
        "submit_label": submit_label,
        "cancel_url": cancel_url,
        "hidden": hidden,
        "type_name": type_name,
        "danger": danger,
        "choice": choice,
        "error": (
            (f"Type “{name}” exactly to confirm." if type_name
             else f"This confirmation is not for “{name}”: confirm again.")
            if attempted else ""
        ),
    }
    # A wrong or missing typed name is a refused request; the first visit is just the question.
    return render(request, "portal/confirm.html", context, status=400 if attempted else 200)
