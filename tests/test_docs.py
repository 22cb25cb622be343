"""The documentation: the MkDocs site builds with --strict (every page in the nav, every link
and anchor resolving, as mkdocs.yml's validation asks), and the README stays a front page."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_documentation_site_builds_strictly(tmp_path):
    # No --quiet: it hides the warnings that --strict counts, and the build would pass.
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "configuration.html").exists()


def test_the_readme_is_short_and_its_links_and_images_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 12 * 1024
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    assert any(t.startswith("docs/images/") for t in targets)
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert missing == []
