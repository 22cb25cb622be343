"""Forms written once per process while nothing about them changes."""

from typing import ClassVar

from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.utils.translation import get_language

# Entries kept at most per form class; beyond that the oldest half is dropped.
KEPT_PER_CLASS = 256


class KeptWhenUnbound:
    """A form mixin: `{{ form }}` writes `fields_template` (found by the project's template
    engine, not the form renderer's, which knows only the apps' templates) with `form` in its
    context. An unbound form's HTML is kept per process under `unbound_key()`, so it must hold
    everything the HTML depends on: by default the class, the language, its prefix, its fields
    and its initial values (a form whose fields read choices or values from the database or
    the clock must not use this). A bound form, or one with errors, is written every time."""

    fields_template: ClassVar[str]
    _kept: ClassVar[dict[tuple, SafeString]]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._kept = {}

    def unbound_key(self) -> tuple:
        return (
            get_language(), self.prefix, self.auto_id, tuple(self.fields),
            tuple(sorted((name, repr(value)) for name, value in self.initial.items())),
        )

    def _write(self) -> SafeString:
        return render_to_string(self.fields_template, {"form": self})

    def render(self, template_name=None, context=None, renderer=None):
        if template_name or context or renderer:
            return super().render(template_name, context, renderer)
        if self.is_bound or self._errors:
            return self._write()
        kept = type(self)._kept
        key = self.unbound_key()
        html = kept.get(key)
        if html is None:
            if len(kept) >= KEPT_PER_CLASS:
                for old in list(kept)[: KEPT_PER_CLASS // 2]:
                    kept.pop(old, None)
            html = kept[key] = self._write()
        return html

    __str__ = render
    __html__ = render
