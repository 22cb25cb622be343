"""Forms whose `{{ form }}` writes a template of the project's own."""

from typing import ClassVar

from django.template.loader import render_to_string
from django.utils.safestring import SafeString


class FieldsFromTemplate:
    """A form mixin: `{{ form }}` writes `fields_template` with `form` in its context, found by
    the project's template engine (the form renderer's knows only the apps' templates)."""

    fields_template: ClassVar[str]

    def render(self, template_name=None, context=None, renderer=None) -> SafeString:
        if template_name or context or renderer:
            return super().render(template_name, context, renderer)
        return render_to_string(self.fields_template, {"form": self})

    __str__ = render
    __html__ = render
