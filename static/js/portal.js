// Behaviour every portal page shares (loaded by base.html, and by Django admin's pages).

// A failed submit: the page comes back with the form's errors, and focus goes to the first
// field in error (or the form's error message), so a keyboard or screen-reader user lands
// on what to fix rather than at the top of the page. A field with `autofocus` keeps its focus.
function focusFirstError() {
  const active = document.activeElement;
  if ((active && active !== document.body) || document.querySelector("[autofocus]")) return;
  // The first error in reading order: a field in error, or a message for the whole form.
  const target = document.querySelector(
    "form [aria-invalid=true]:not([type=hidden]), form .is-invalid:not([type=hidden]), "
    + "form .alert-danger, form .errorlist.nonfield, .errornote, #filter-errors"
  );
  if (!target) return;
  if (!target.matches("input, select, textarea, button, a[href]") && !target.hasAttribute("tabindex")) {
    target.setAttribute("tabindex", "-1");
  }
  target.focus();
}

// Icons are decoration next to their words: screen readers skip them.
function hideIcons(root) {
  for (const icon of root.querySelectorAll("i.bi:not([aria-hidden])")) icon.setAttribute("aria-hidden", "true");
}

document.addEventListener("DOMContentLoaded", () => {
  hideIcons(document);
  focusFirstError();
});

// What an htmx request that fails shows. A 400 or 422 answer is the page's own part (a list with
// the filter it could not apply named above the table): it is swapped in like any answer. Any
// other failure (a server error, no answer) of a request that moves the page to a new URL (a
// filter form, a page link) empties its target and says so, so no rows stay on screen under
// filter choices they do not match.
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if (status === 400 || status === 422) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

document.addEventListener("htmx:afterSwap", (event) => hideIcons(event.detail.target.parentElement || document));

function showFailure(event) {
  const source = event.detail.elt;
  const target = event.detail.target;
  if (!source || !target || !source.closest("[hx-push-url]")) return;
  const status = event.detail.xhr ? event.detail.xhr.status : 0;
  const alert = document.createElement("div");
  alert.className = "alert alert-danger m-3";
  alert.setAttribute("role", "alert");
  alert.id = "htmx-error";
  alert.dataset.status = String(status);
  const strong = document.createElement("strong");
  strong.textContent = status
    ? `The list could not be updated (error ${status}).`
    : "The list could not be updated: the portal did not answer.";
  const reload = document.createElement("a");
  reload.href = (event.detail.pathInfo && event.detail.pathInfo.finalRequestPath) || window.location.href;
  reload.textContent = "Try again";
  alert.append(strong, " Nothing is listed rather than rows that may not match the filter. ", reload);
  target.replaceChildren(alert);
}

document.addEventListener("htmx:responseError", showFailure);
document.addEventListener("htmx:sendError", showFailure);
