"""Admin saves that a service refuses answer the form again, with the refusal on its fields.

A ModelAdmin whose `save_model` calls a service checks the same rules in the form's `clean()`
first, so a person sees field errors. Between that check and the save another admin may save
(two overlapping rates, two credit notes that together exceed the invoice): the service, which
checks again under its lock, then refuses with a ValidationError or a DomainError. Django's
admin would answer that with a server error; `ServiceSaveAdmin` shows the form again instead,
with the service's messages on the fields they name (on the form itself for the rest), as the
form's own check would have, and nothing saved (the refused attempt's transaction is rolled
back before the form is shown again).
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from .errors import DomainError

_REFUSAL = "_admin_save_refused"


def _messages(error: Exception) -> dict[str, list[str]]:
    if isinstance(error, ValidationError):
        if hasattr(error, "error_dict"):
            return error.message_dict
        return {NON_FIELD_ERRORS: error.messages}
    return {NON_FIELD_ERRORS: [str(error)]}


class ServiceSaveAdmin(admin.ModelAdmin):
    """A ModelAdmin whose save's refusal (ValidationError, DomainError) is a form error."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except (ValidationError, DomainError) as error:
            if request.method != "POST" or hasattr(request, _REFUSAL):
                raise
            # The refused save's transaction has been rolled back: validate the form again
            # (it may now see what the other admin saved) and show the service's refusal on it.
            setattr(request, _REFUSAL, error)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change, **kwargs)
        refusal = getattr(request, _REFUSAL, None)
        if refusal is None:
            return form_class

        class RefusedForm(form_class):
            def clean(self):
                cleaned = super().clean()
                for field, messages in _messages(refusal).items():
                    target = field if field in self.fields else None
                    shown = self.errors.get(target or NON_FIELD_ERRORS, [])
                    for message in messages:
                        if message not in shown:
                            self.add_error(target, message)
                return cleaned

        RefusedForm.__name__ = form_class.__name__
        return RefusedForm
