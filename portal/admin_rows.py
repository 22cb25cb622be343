"""Django admin changelist rows, planned once per column instead of worked out per cell.

Django's `items_for_result` redoes per cell what only depends on the column (is it a field or
a method, its CSS class, is it the link), and per row it reverses the change URL and resolves
it again to merge the preserved filters into its query string. On the review queue's 400 rows
that was most of the page. `changelist_rows` gives the same HTML (tests compare it with
Django's own, cell for cell) with each column's decisions taken once, the change URL reversed
once for a placeholder pk, and each row joined into one string (the template's row loop then
prints one item instead of one per cell).

Only what these lists use is planned: model fields, ModelAdmin methods and callables, the
action checkbox, the link column. A changelist with editable rows or opened as a popup (the
"+" of a foreign key) goes through Django's own code.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django import forms
from django.contrib.admin import ModelAdmin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME, ActionForm
from django.contrib.admin.templatetags.admin_list import (
    ResultList,
    _coerce_field_name,
    result_headers,
    result_hidden_fields,
    results,
)
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import (
    FieldIsAForeignKeyColumnName,
    _get_non_gfk_field,
    display_for_field,
    display_for_value,
    quote,
)
from django.core.exceptions import FieldDoesNotExist, ObjectDoesNotExist
from django.db import models
from django.template.loader import get_template
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils import dateformat, timezone
from django.utils.formats import get_format, localize
from django.utils.functional import Promise
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, gettext

# Stands for the pk in the change URL reversed once; only URL-safe characters, so the reversed
# path and the preserved filters' query string come back with it unchanged.
_PK = "0PK0PLACEHOLDER0"


@dataclass
class _Column:
    """What one list_display entry shows, decided once for the whole page."""

    name: str
    classes: str  # the cell's class attribute without "nowrap" for values that are dates
    link: bool
    field: models.Field | None = None
    foreign_key: bool = False
    choices: dict | None = None
    value_of: Callable | None = None  # for methods, callables and attributes
    boolean: bool = False
    empty: str = "-"
    dates: _Dates | None = None  # for date and datetime fields: formats.localize, faster
    text: bool = False  # a text field without choices: its text is what display_for_field shows


def _plan(cl) -> list[_Column] | None:
    """One _Column per list_display entry, or None where a column needs Django's own code."""
    opts = cl.lookup_opts
    model_admin = cl.model_admin
    links = cl.list_display_links
    columns: list[_Column] = []
    first = True
    for index, name in enumerate(cl.list_display):
        if links is None:
            link = False
        elif first and not links:
            link = True
        else:
            link = name in links
        if link:
            first = False
        empty = model_admin.get_empty_value_display()
        classes = f"field-{_coerce_field_name(name, index)}"
        try:
            field = _get_non_gfk_field(opts, name) if isinstance(name, str) else None
        except (FieldDoesNotExist, FieldIsAForeignKeyColumnName):
            field = None
        if field is not None:
            if field.auto_created:
                return None
            foreign_key = isinstance(field.remote_field, models.ManyToOneRel)
            if isinstance(field, (models.DateField, models.TimeField, models.ForeignKey)):
                classes += " nowrap"
            choices = dict(field.flatchoices) if getattr(field, "flatchoices", None) else None
            columns.append(
                _Column(
                    name=field.name if foreign_key else name,
                    classes=classes,
                    link=link,
                    field=field,
                    foreign_key=foreign_key,
                    empty=empty,
                    choices=choices,
                    dates=_Dates.for_field(field) if choices is None else None,
                    text=choices is None
                    and isinstance(field, (models.CharField, models.TextField))
                    and not isinstance(field, models.URLField),
                )
            )
            continue
        if callable(name):
            attr = name
        elif hasattr(model_admin, name) and name != "__str__":
            attr = getattr(model_admin, name)
        else:
            return None  # a model attribute or a lookup: rare here, Django's code knows them
        if name == "action_checkbox":
            classes = "action-checkbox"
            if type(model_admin).action_checkbox is ModelAdmin.action_checkbox:
                attr = _action_checkbox()
        # A method may say how to answer for every row of one page at once (what it reads
        # per call, the language say, read once): `planned_per_page(model_admin)` gives the
        # function of a row, whose answers are the method's.
        per_page = getattr(attr, "planned_per_page", None)
        columns.append(
            _Column(
                name=name if isinstance(name, str) else "",
                classes=classes,
                link=link,
                value_of=attr if per_page is None else per_page(model_admin),
                boolean=getattr(attr, "boolean", False),
                empty=getattr(attr, "empty_value_display", empty),
            )
        )
    return columns


def _escape(text) -> str:
    """conditional_escape without its lazy-string wrapper (most of a row's time went there):
    the same text, escaped unless it is safe already."""
    if type(text) is str:
        return html.escape(text)
    if isinstance(text, Promise):
        text = str(text)
    if hasattr(text, "__html__"):
        return text.__html__()
    return html.escape(str(text))


class _Dates:
    """formats.localize of a date or datetime field's values (what display_for_field shows),
    the localized format parsed once per process instead of once per cell: the same text."""

    def __init__(self, format_name: str, local: bool):
        self.local = local  # a datetime: shown in the current time zone
        self.pieces: list[tuple[bool, str]] = []  # (is a format character, text)
        fmt = str(get_format(format_name))
        for index, piece in enumerate(dateformat.re_formatchars.split(fmt)):
            if index % 2:
                self.pieces.append((True, piece))
            elif piece:
                self.pieces.append((False, dateformat.re_escaped.sub(r"\1", piece)))
        self.time_pieces = any(
            is_char and hasattr(dateformat.TimeFormat, piece) for is_char, piece in self.pieces
        )
        self.seen: dict = {}
        # A day's pieces (the month's name...) formatted once per day, a time's ("4:30 p.m.")
        # once per minute: hundreds of rows span a few days.
        self.by_day: dict = {}

    @classmethod
    def for_field(cls, field) -> _Dates | None:
        """The formatter of a field's values in the current language and time zone, one per
        process: what it has formatted stays known from page to page (the same rows' dates,
        or their days and minutes, come back on every view of a list)."""
        if isinstance(field, models.DateTimeField):
            key = ("DATETIME_FORMAT", True, get_language(), timezone.get_current_timezone())
        elif isinstance(field, models.DateField):
            key = ("DATE_FORMAT", False, get_language(), None)
        else:
            return None
        dates = _DATES.get(key)
        if dates is None:
            if len(_DATES) >= _DATES_MAX:
                _DATES.clear()
            dates = _DATES[key] = cls(key[0], local=key[1])
        return dates

    def __call__(self, value) -> str:
        text = self.seen.get(value)
        if text is None:
            if len(self.seen) >= _DATES_SEEN_MAX:
                self.seen.clear()
                self.by_day.clear()
            text = self.seen[value] = self._format(value)
        return text

    def _format(self, value) -> str:
        if self.local:
            value = timezone.template_localtime(value)
        if not isinstance(value, datetime.date) or (
            type(value) is datetime.date and self.time_pieces
        ):
            return localize(value)  # Django's own answer (or its error)
        formatter = None  # made at the first piece not known yet
        day = value.toordinal()
        texts = []
        for index, (is_char, piece) in enumerate(self.pieces):
            if not is_char:
                texts.append(piece)
                continue
            key = None
            if piece in _DAY_CHARS:
                key = (index, day)
            elif piece in _MINUTE_CHARS:
                key = (index, value.hour, value.minute)
            text = self.by_day.get(key) if key is not None else None
            if text is None:
                if formatter is None:
                    formatter = dateformat.DateFormat(value)
                text = str(getattr(formatter, piece)())
                if key is not None:
                    self.by_day[key] = text
            texts.append(text)
        return "".join(texts)


_DATES: dict[tuple, _Dates] = {}
_DATES_MAX = 64
_DATES_SEEN_MAX = 20_000  # values, and as many day and minute pieces: a few MB at most

# The format characters whose text depends only on the (local) day, or on its hour and minute.
_DAY_CHARS = frozenset("bdDEFjlLmMnNSwWyYzot")
_MINUTE_CHARS = frozenset("aAfgGhHiP")


def _action_checkbox() -> Callable:
    """ModelAdmin.action_checkbox without a form widget rendered through its template per row
    (a quarter of the review queue's time): the same input, written out."""
    label = gettext("Select this object for an action - {}")

    def checkbox(obj) -> SafeString:
        # Escaped here: the pk, and the object's name (as format_html would).
        return SafeString(
            f'<input type="checkbox" name="{ACTION_CHECKBOX_NAME}" value="{_escape(obj.pk)}"'
            f' class="action-select" aria-label="{label.format(_escape(str(obj)))}">'
        )

    return checkbox


def _cell(column: _Column, obj) -> tuple[object, str]:
    """The cell's content (escaped when printed) and its class attribute."""
    if column.field is not None:
        value = getattr(obj, column.name)
        if column.foreign_key:
            return (column.empty if value is None else value), column.classes
        if isinstance(value, str):
            if not value.strip():
                value = ""
            elif column.text:
                return value, column.classes
        if column.choices is not None:
            return column.choices.get(value, column.empty), column.classes
        if column.dates is not None:
            if value in column.field.empty_values:
                return column.empty, column.classes
            return column.dates(value), column.classes
        return display_for_field(value, column.field, column.empty, column.link), column.classes
    value = column.value_of(obj)
    if isinstance(value, str) and not column.boolean:
        if value.strip():
            return value, column.classes  # what display_for_value answers for text
        value = ""
    classes = column.classes
    if isinstance(value, (datetime.date, datetime.time)):
        classes += " nowrap"
    return display_for_value(value, column.empty, column.boolean), classes


_CHANGE_URLS: dict[tuple, str | None] = {}
_CHANGE_URLS_MAX = 1000


def _change_url(cl) -> str | None:
    """The change URL with the page's filters kept, `_PK` standing for the row's pk: once per
    model, site, URL prefix and filters kept (merging the filters resolves the URL again)."""
    key = (
        cl.opts.label,
        cl.model_admin.admin_site.name,
        get_script_prefix(),
        get_urlconf(),
        cl.preserved_filters,
    )
    try:
        return _CHANGE_URLS[key]
    except KeyError:
        pass
    if len(_CHANGE_URLS) >= _CHANGE_URLS_MAX:
        _CHANGE_URLS.clear()
    url = _CHANGE_URLS[key] = _reverse_change_url(cl)
    return url


def _reverse_change_url(cl) -> str | None:
    try:
        url = reverse(
            f"admin:{cl.opts.app_label}_{cl.opts.model_name}_change",
            args=(_PK,),
            current_app=cl.model_admin.admin_site.name,
        )
    except NoReverseMatch:
        return None
    return add_preserved_filters({"preserved_filters": cl.preserved_filters, "opts": cl.opts}, url)


def _rows(cl, columns: list[_Column]) -> Iterator[ResultList]:
    for row in _row_html(cl, columns):
        yield ResultList(None, [row])


def _row_html(cl, columns: list[_Column]) -> Iterator[SafeString]:
    """Each row's cells joined into one string. The tags each column's cells open and close
    with, and the change URL around its pk, are written once per page, not once per cell.

    A changelist that says what each row shows (`row_key(obj)`, a hashable of every value its
    cells read) has each row's HTML written once per process: the same rows come back on every
    view of a list, and a row whose values change gets a new key."""
    url = _change_url(cl)
    before, _, after = html.escape(url).partition(_PK) if url is not None else ("", "", "")
    pk_attname = cl.pk_attname
    escape = html.escape
    cells_of = []  # (column, tag, its opening with the column's class, its closing)
    first = True
    for column in columns:
        tag = "td"
        if column.link:
            tag = "th" if first else "td"
            first = False
        cells_of.append((column, tag, f'<{tag} class="{column.classes}">', f"</{tag}>"))

    def row_of(obj) -> SafeString:
        cells = []
        for column, tag, opening, closing in cells_of:
            try:
                content, classes = _cell(column, obj)
            except ObjectDoesNotExist:
                content, classes = column.empty, column.classes
            content = escape(content) if type(content) is str else _escape(content)
            if column.link and url is not None:
                pk = escape(str(quote(getattr(obj, pk_attname))))
                content = f'<a href="{before}{pk}{after}">{content}</a>'
            if classes is column.classes:
                cells.append(f"{opening}{content}{closing}")
            else:  # a value that adds to the column's class (a date's "nowrap")
                cells.append(f'<{tag} class="{classes}">{content}{closing}')
        # Every cell's content was escaped above (unless safe already).
        return SafeString("".join(cells))

    row_key = getattr(cl, "row_key", None)
    if row_key is None:
        for obj in cl.result_list:
            yield row_of(obj)
        return
    # What the rows' HTML depends on besides each row's values: the columns (and what they
    # read per page, the language), the link and the time zone of the dates.
    page = (
        type(cl.model_admin),
        tuple((column.name, column.classes, column.link) for column in columns),
        url,
        get_language(),
        timezone.get_current_timezone(),
    )
    for obj in cl.result_list:
        key = (page, row_key(obj))
        row = _ROWS.get(key)
        if row is None:
            if len(_ROWS) >= _ROWS_MAX:
                _ROWS.clear()
            row = _ROWS[key] = row_of(obj)
        yield row


# Rows' HTML by their page's columns and their own values (_row_html): under 1 KiB a row,
# a few MiB at most.
_ROWS: dict[tuple, SafeString] = {}
_ROWS_MAX = 4000


def changelist_rows(cl) -> list[ResultList]:
    """The rows of `cl` as Django's `results(cl)` renders them, each row one string."""
    columns = None if (cl.formset or cl.is_popup or cl.to_field) else _plan(cl)
    if columns is None:
        return list(results(cl))
    return list(_rows(cl, columns))


_THEADS: dict[tuple, str] = {}
_THEADS_MAX = 1000


def result_list_html(cl) -> SafeString:
    """Django's `{% result_list cl %}`: admin/change_list_results.html, the same HTML. Planned
    rows come joined into one string (not a template loop over rows and cells), and the header
    row, which depends only on the columns and the query string (the sort links), is rendered
    once per query string."""
    columns = None if (cl.formset or cl.is_popup or cl.to_field) else _plan(cl)
    if columns is None:
        return get_template("admin/change_list_results.html").render(result_list_context(cl))
    rows = list(_row_html(cl, columns))
    return get_template("admin/planned_change_list_results.html").render(
        {
            "result_hidden_fields": [],
            "results": bool(rows),
            "thead": _thead(cl) if rows else "",
            # As the template's row loop prints them; each row was escaped cell by cell.
            "rows": mark_safe("".join(f"\n\n<tr>{row}</tr>\n" for row in rows)),  # noqa: S308
        }
    )


def _thead(cl) -> SafeString:
    ordering = cl.get_ordering_field_columns()
    key = (
        type(cl.model_admin),
        tuple(name if isinstance(name, str) else id(name) for name in cl.list_display),
        tuple(cl.list_display_links or ()),
        tuple(cl.sortable_by) if cl.sortable_by is not None else None,
        tuple(sorted((name, tuple(values)) for name, values in cl.params.items())),
        tuple(ordering.items()),
        get_language(),
    )
    html_ = _THEADS.get(key)
    if html_ is None:
        headers = list(result_headers(cl))
        html_ = get_template("admin/planned_change_list_thead.html").render(
            {
                "result_headers": headers,
                "num_sorted_fields": sum(1 for h in headers if h["sortable"] and h["sorted"]),
            }
        )
        if len(_THEADS) >= _THEADS_MAX:
            _THEADS.clear()
        _THEADS[key] = html_
    return mark_safe(html_)  # noqa: S308 - rendered by Django's template, escaped there


def result_list_context(cl) -> dict:
    """The context of admin/change_list_results.html, as Django's `result_list` tag makes it."""
    headers = list(result_headers(cl))
    return {
        "cl": cl,
        "result_hidden_fields": list(result_hidden_fields(cl)),
        "result_headers": headers,
        "num_sorted_fields": sum(1 for h in headers if h["sortable"] and h["sorted"]),
        "results": changelist_rows(cl),
    }


# --- the action form ---------------------------------------------------------------------------


def _plain(choices) -> tuple:
    """Choices as plain strings (lazy labels translated), for a cache key."""
    return tuple(
        (str(value), _plain(label) if isinstance(label, (list, tuple)) else str(label))
        for value, label in choices
    )


class _RenderedOnce:
    """A widget whose HTML, which depends only on its name, value, attributes, choices and the
    language, is rendered once per process: the action form's select and hidden input went
    through the form renderer's templates (select, option per action, attrs) on every page."""

    _html: dict[tuple, str]
    _HTML_MAX = 256

    def render(self, name, value, attrs=None, renderer=None):
        key = (
            name,
            repr(value),
            repr(sorted(self.build_attrs(self.attrs, attrs).items())),
            _plain(getattr(self, "choices", ())),
            get_language(),
            type(renderer),
        )
        html_ = self._html.get(key)
        if html_ is None:
            if len(self._html) >= self._HTML_MAX:
                self._html.clear()
            html_ = self._html[key] = super().render(name, value, attrs, renderer)
        return html_


class _Select(_RenderedOnce, forms.Select):
    _html = {}


class _HiddenInput(_RenderedOnce, forms.HiddenInput):
    _html = {}


def action_bar_key(context) -> tuple | None:
    """Everything admin/actions.html shows (the `{% admin_actions %}` bar) on a changelist: the
    action form's fields, which bar of the page it is, the rows on the page and in all, the
    selection notes and the language. None for a bound form (its errors and values)."""
    form = context.get("action_form")
    cl = context.get("cl")
    if form is None or cl is None or form.is_bound:
        return None
    return (
        cl.opts.label,
        type(form),
        form.prefix,
        form.auto_id,
        repr(sorted(form.initial.items())),
        tuple(
            (
                name,
                type(field.widget),
                str(field.label),
                repr(field.initial),
                repr(sorted(field.widget.attrs.items())),
                _plain(getattr(field, "choices", ())),
            )
            for name, field in form.fields.items()
        ),
        context.get("action_index", -1) + 1,
        bool(context.get("actions_selection_counter")),
        len(cl.result_list),
        cl.result_count,
        str(context.get("selection_note")),
        str(context.get("selection_note_all")),
        str(context.get("module_name")),
        get_language(),
    )


def pagination_key(cl) -> tuple:
    """Everything admin/pagination.html shows of `cl`: the page and the pages, the count, the
    query string each page's link keeps, whether "Show all" is offered, the language."""
    return (
        cl.opts.label,
        type(cl.paginator),
        cl.paginator.num_pages,
        cl.page_num,
        cl.result_count,
        cl.show_all,
        cl.can_show_all,
        cl.multi_page,
        bool(cl.formset),
        repr(sorted(cl.filter_params.items())),
        get_language(),
    )


class PlannedActionForm(ActionForm):
    """Django admin's action form, its two widgets rendered once per process (same HTML)."""

    action = forms.ChoiceField(label=ActionForm.base_fields["action"].label, widget=_Select)
    select_across = forms.BooleanField(
        label="",
        required=False,
        initial=0,
        widget=_HiddenInput({"class": "select-across"}),
    )
