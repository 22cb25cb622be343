"""Django admin's changelist table with rows planned per column (see portal.admin_rows), and
the nav sidebar's app list rendered once per process for each page that it marks."""

from django import template
from django.contrib.admin.filters import (
    AllValuesFieldListFilter,
    BooleanFieldListFilter,
    ChoicesFieldListFilter,
)
from django.contrib.admin.templatetags.admin_list import (
    admin_actions,
    admin_list_filter,
    pagination,
)
from django.contrib.admin.templatetags.base import InclusionAdminNode
from django.template.defaultfilters import urlencode
from django.template.loader import get_template
from django.urls import get_script_prefix, get_urlconf
from django.utils.functional import Promise
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from portal.admin_rows import action_bar_key, pagination_key, result_list_html

register = template.Library()


class CachedAppList(list):
    """A copy of an app list the admin site built once; `key` names it (the nav sidebar's
    cache, below). Here, not in portal.admin_site: infrastructure imports no app."""

    def __init__(self, key: tuple, apps: list[dict]):
        super().__init__(apps)
        self.key = key


# admin/app_list.html as the nav sidebar shows it, by everything that the output depends on.
_APP_LISTS: dict[tuple, str] = {}
_APP_LISTS_MAX = 500


# A filter's HTML by everything that it depends on, for filters whose choices are fixed.
_FILTERS: dict[tuple, str] = {}
_FILTERS_MAX = 1000


@register.simple_tag
def planned_list_filter(cl, spec) -> SafeString:
    """Django's `{% admin_list_filter cl spec %}`, from a cache for a filter whose choices are
    fixed by code (a field's choices, a boolean, a SimpleListFilter that says
    `static_choices = True`): its HTML then depends only on the page's query string (which
    choice is selected, what each link keeps) and the language. The review queue's resource
    filter alone is 39 links, each a query string built and a template row rendered. A filter
    of the values a column holds (AllValuesFieldListFilter) is cached under those values too,
    as its own query reads them on every page."""
    static = isinstance(spec, (ChoicesFieldListFilter, BooleanFieldListFilter)) or getattr(
        spec, "static_choices", False
    )
    # A filter of the values there are (the tenants' cohorts): its HTML is its values' too.
    values = isinstance(spec, AllValuesFieldListFilter)
    if not (static or values) or cl.add_facets:  # counts come from the data
        return admin_list_filter(cl, spec)
    key = (
        # Two models' fields of one name and title ("status") have different choices.
        cl.model,
        type(spec),
        getattr(spec, "field_path", None),
        getattr(spec, "parameter_name", None),
        spec.template,
        str(spec.title),
        tuple(sorted((name, tuple(values)) for name, values in cl.params.items())),
        cl.is_popup,
        get_language(),
        # Read here by the filter's own query, once: its choices() reuses the rows read.
        (tuple(spec.lookup_choices), str(spec.empty_value_display)) if values else None,
    )
    html = _FILTERS.get(key)
    if html is None:
        if len(_FILTERS) >= _FILTERS_MAX:
            _FILTERS.clear()
        html = _FILTERS[key] = str(admin_list_filter(cl, spec))
    return mark_safe(html)  # noqa: S308 - rendered by Django's filter template, escaped there


_MEDIA: dict[tuple, str] = {}
_MEDIA_MAX = 256


@register.simple_tag
def planned_media_js(media) -> SafeString:
    """`{{ media.js }}` (the changelist's scripts), rendered once per list of scripts: merging
    the lists and resolving each script's hashed static URL was redone on every page."""
    if media is None:
        return ""
    key = tuple(tuple(repr(path) for path in paths) for paths in media._js_lists)
    html = _MEDIA.get(key)
    if html is None:
        if len(_MEDIA) >= _MEDIA_MAX:
            _MEDIA.clear()
        html = _MEDIA[key] = str(media["js"])
    return mark_safe(html)  # noqa: S308 - Django's Media rendering, escaped there


_ACTION_BARS: dict[tuple, str] = {}
_ACTION_BARS_MAX = 1000


class _PlannedActionsNode(InclusionAdminNode):
    """`{% admin_actions %}` (its template found per model, app or site as Django finds it),
    rendered once for everything it shows (portal.admin_rows.action_bar_key): the action
    form's label, select and hidden input, the counter and its notes went through half a
    dozen templates on every page."""

    def render(self, context):
        key = action_bar_key(context)
        if key is None:
            return super().render(context)
        html = _ACTION_BARS.get(key)
        if html is None:
            html = super().render(context)  # counts the bar in context["action_index"]
            if len(_ACTION_BARS) >= _ACTION_BARS_MAX:
                _ACTION_BARS.clear()
            _ACTION_BARS[key] = html
        else:
            context["action_index"] = context.get("action_index", -1) + 1  # as Django's tag
        return html


@register.tag(name="planned_admin_actions")
def planned_admin_actions(parser, token):
    return _PlannedActionsNode(parser, token, func=admin_actions, template_name="actions.html")


_PAGINATIONS: dict[tuple, str] = {}
_PAGINATIONS_MAX = 1000


class _PlannedPaginationNode(InclusionAdminNode):
    """`{% pagination cl %}`, rendered once for everything it shows
    (portal.admin_rows.pagination_key): a link and a query string per page number."""

    def render(self, context):
        key = pagination_key(self.args[0].resolve(context))
        html = _PAGINATIONS.get(key)
        if html is None:
            html = super().render(context)
            if len(_PAGINATIONS) >= _PAGINATIONS_MAX:
                _PAGINATIONS.clear()
            _PAGINATIONS[key] = html
        return html


@register.tag(name="planned_pagination")
def planned_pagination(parser, token):
    return _PlannedPaginationNode(
        parser, token, func=pagination, template_name="pagination.html", takes_context=False
    )


@register.simple_tag
def planned_result_list(cl) -> SafeString:
    """Django's `{% result_list cl %}`, the same HTML, without the per-cell lookups."""
    return result_list_html(cl)


@register.simple_tag(takes_context=True)
def nav_app_list(context) -> SafeString:
    """`{% include 'admin/app_list.html' with app_list=available_apps show_changelinks=False %}`
    as Django's nav sidebar has it, from a cache: the output depends only on the apps and
    models listed, which of their URLs the request's path contains (the current app and
    model) and the language. Rendering it was ~4 ms of every admin page."""
    app_list = context.get("available_apps") or []
    request = context.get("request")
    path = urlencode(request.path) if request is not None else ""
    if isinstance(app_list, CachedAppList):
        # The site's own list (a view that edits it passes a plain list instead): named by its
        # key, and by which app and model are the current ones.
        key = (
            app_list.key,
            tuple(
                (
                    app["app_url"] in path,
                    tuple(bool(m["admin_url"]) and m["admin_url"] in path for m in app["models"]),
                )
                for app in app_list
            ),
        )
    else:
        key = _content_key(app_list, path)
    html = _APP_LISTS.get(key)
    if html is None:
        # app_list.html reads only these (the path through request.path).
        html = get_template("admin/app_list.html").render(
            {"app_list": app_list, "show_changelinks": False, "request": request}
        )
        if len(_APP_LISTS) >= _APP_LISTS_MAX:
            _APP_LISTS.clear()
        _APP_LISTS[key] = html
    return mark_safe(html)  # noqa: S308 - rendered by Django's template, escaped there


def _content_key(app_list, path: str) -> tuple:
    """Everything admin/app_list.html shows of `app_list` on the page at `path`."""
    return (
        get_language(),
        tuple(
            (
                str(app["app_label"]),
                str(app["name"]),
                app["app_url"],
                app["app_url"] in path,
                tuple(
                    (
                        str(model["object_name"]),
                        str(model["name"]),
                        model.get("admin_url"),
                        model.get("add_url"),
                        bool(model.get("view_only")),
                        bool(model.get("admin_url")) and model["admin_url"] in path,
                    )
                    for model in app["models"]
                ),
            )
            for app in app_list
        ),
    )


# A fragment's HTML by where it is in which template and everything it says it varies on.
_FRAGMENTS: dict[tuple, str] = {}
_FRAGMENTS_MAX = 2000


def _hashable(value):
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, Promise):
        return str(value)
    return value


class _FragmentNode(template.Node):
    def __init__(self, nodelist, vary_on):
        self.nodelist = nodelist
        self.vary_on = vary_on

    def render(self, context):
        key = (
            self.origin.name,
            self.token.position,
            tuple(_hashable(value.resolve(context)) for value in self.vary_on),
            get_language(),
            get_script_prefix(),
            get_urlconf(),
        )
        html = _FRAGMENTS.get(key)
        if html is None:
            if len(_FRAGMENTS) >= _FRAGMENTS_MAX:
                _FRAGMENTS.clear()
            html = _FRAGMENTS[key] = self.nodelist.render(context)
        return html


@register.tag(name="planned_fragment")
def planned_fragment(parser, token):
    """`{% planned_fragment value... %}...{% endplanned_fragment %}`: what is inside, rendered
    once per process for each set of values (and the language and URL prefix). Everything the
    fragment shows must be named among the values, and nothing in it may be a request's own
    (a CSRF token, a message): the admin changelist's breadcrumbs, object tools and search
    form went through three templates, five URL reversals and half a dozen translations on
    every page, for HTML that only changes with the list and its query string."""
    vary_on = [parser.compile_filter(bit) for bit in token.split_contents()[1:]]
    nodelist = parser.parse(("endplanned_fragment",))
    parser.delete_first_token()
    return _FragmentNode(nodelist, vary_on)
