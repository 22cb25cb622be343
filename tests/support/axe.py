"""axe-core (from npm, tests/browser/package.json; `make install-test` installs it) run inside
a page open in Playwright: what it reports as a serious or critical WCAG 2 A/AA violation."""

from pathlib import Path

import pytest
from playwright.sync_api import Page

AXE_JS = Path(__file__).resolve().parents[1] / "browser/node_modules/axe-core/axe.min.js"
SERIOUS = ("serious", "critical")

RUN_AXE = """async () => {
  const results = await axe.run(document, {
    runOnly: {type: "tag", values: ["wcag2a", "wcag2aa"]},
    resultTypes: ["violations"],
  });
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.join(" "), html: n.html.slice(0, 160),
                                summary: (n.failureSummary || "").slice(0, 300)})),
  }));
}"""


def axe_violations(page: Page, *, impacts: tuple[str, ...] = SERIOUS) -> list[dict]:
    """The violations of WCAG 2 A and AA axe finds in the page as it is now, of those impacts."""
    if not AXE_JS.exists():
        pytest.fail(f"{AXE_JS} is missing: `make install-test` installs it (npm).")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE_JS))
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in impacts]


def describe(violations: list[dict]) -> str:
    """The violations, one line per element, for an assertion's message."""
    return "\n".join(
        f"  [{v['impact']}] {v['id']} ({v['help']}): {node['target']}  {node['html']}"
        for v in violations for node in v["nodes"][:5]
    )


ID_PROBLEMS = """() => {
  const counts = new Map();
  for (const el of document.querySelectorAll("[id]")) {
    counts.set(el.id, (counts.get(el.id) || 0) + 1);
  }
  const problems = [...counts].filter(([, n]) => n > 1)
    .map(([id, n]) => `id “${id}” used ${n} times`);
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : `[name=${el.name}]`);
  for (const attr of ["aria-describedby", "aria-labelledby", "aria-controls",
                      "aria-errormessage"]) {
    for (const el of document.querySelectorAll(`[${attr}]`)) {
      for (const id of el.getAttribute(attr).split(/\\s+/).filter(Boolean)) {
        if (!counts.has(id)) problems.push(`${name(el)} ${attr} names “${id}”, not on the page`);
      }
    }
  }
  for (const label of document.querySelectorAll("label[for]")) {
    if (!counts.has(label.htmlFor)) {
      problems.push(`label “${label.textContent.trim().slice(0, 30)}” for “${label.htmlFor}”, `
                    + "not on the page");
    }
  }
  return problems;
}"""


def id_problems(page: Page) -> list[str]:
    """What axe leaves to review: ids used twice, and aria-describedby (labelledby, controls,
    errormessage) or a label's `for` naming an id the page does not have."""
    return page.evaluate(ID_PROBLEMS)
