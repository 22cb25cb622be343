"""Django admin's changelist table with rows planned per column (see portal.admin_rows), and
the nav sidebar's app list rendered once per process for each page that it marks."""

from django import template
from django.template.defaultfilters import urlencode
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from portal.admin_rows import result_list_context
from portal.admin_site import CachedAppList

register = template.Library()

# admin/app_list.html as the nav sidebar shows it, by everything that the output depends on.
_APP_LISTS: dict[tuple, str] = {}
_APP_LISTS_MAX = 500


@register.inclusion_tag("admin/change_list_results.html")
def planned_result_list(cl) -> dict:
    """Django's `{% result_list cl %}`, the same HTML, without the per-cell lookups."""
    return result_list_context(cl)


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
