"""axe-core (from npm, tests/browser/package.json; `make install-test` installs it) run inside
a page open in Playwright: what it reports as a serious or critical WCAG 2 A/AA violation."""

from pathlib import Path

import pytest
from playwright.sync_api import Page

AXE_JS = Path(__file__).resolve().parents[1] / "browser" / "node_modules" / "axe-core" / "axe.min.js"
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
        pytest.fail(f"{AXE_JS} is missing: `make install-test` installs tests/browser's npm packages.")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE_JS))
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in impacts]


def describe(violations: list[dict]) -> str:
    """The violations, one line per element, for an assertion's message."""
    return "\n".join(
        f"  [{v['impact']}] {v['id']} ({v['help']}): {node['target']}  {node['html']}"
        for v in violations for node in v["nodes"][:5]
    )
