"""The lock files (requirements/*.txt, written by `make lock`) against pyproject.toml: every pin
there is the locked version, the image's runtime lock agrees with the suite's test lock, every
locked file has its hash, and the supported Pythons are declared the same way everywhere."""

import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUNTIME_LOCK = ROOT / "requirements" / "runtime.txt"
TEST_LOCK = ROOT / "requirements" / "test.txt"
SUPPORTED = ("3.11", "3.12", "3.13")
TEST_FLOOR = ("3.11.5", "3.12.0", "3.13.0")


def _entries(lock: Path) -> dict[str, tuple[str, list[str], Marker | None]]:
    """name -> (version, hashes, marker), from a lock file's logical lines."""
    text = re.sub(r"\\\n", " ", lock.read_text())
    entries = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if not line:
            continue
        hashes = re.findall(r"--hash=(sha256:[0-9a-f]{64})", line)
        requirement = Requirement(re.sub(r"\s--hash=\S+", "", line).strip())
        (pin,) = requirement.specifier
        assert pin.operator == "==", line
        entries[canonicalize_name(requirement.name)] = (pin.version, hashes, requirement.marker)
    return entries


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for text in requirements:
        requirement = Requirement(text)
        (pin,) = requirement.specifier
        assert pin.operator == "==", f"{text}: pyproject.toml pins exact versions"
        pins[canonicalize_name(requirement.name)] = pin.version
    return pins


RUNTIME = _entries(RUNTIME_LOCK)
TEST = _entries(TEST_LOCK)
RUNTIME_PINS = _pins(PYPROJECT["project"]["dependencies"])
EXTRA_PINS = {
    extra: _pins(requirements)
    for extra, requirements in PYPROJECT["project"]["optional-dependencies"].items()
}


def test_every_runtime_pin_is_the_version_both_locks_hold():
    for name, version in RUNTIME_PINS.items():
        assert RUNTIME.get(name, (None,))[0] == version, f"{name}: run `make lock`"
        assert TEST.get(name, (None,))[0] == version, f"{name}: run `make lock`"


def test_every_test_and_docs_pin_is_the_version_the_test_lock_holds():
    for extra in ("test", "docs"):
        for name, version in EXTRA_PINS[extra].items():
            assert TEST.get(name, (None,))[0] == version, f"{name} ({extra}): run `make lock`"


def test_the_image_lock_is_the_test_lock_less_the_test_tools():
    for name, (version, _, marker) in RUNTIME.items():
        # The test lock starts at 3.11.5 (the docs tools need it): what only older 3.11s need
        # is in the image's lock alone.
        if marker and not any(marker.evaluate({"python_full_version": v}) for v in TEST_FLOOR):
            continue
        assert TEST.get(name, (None,))[0] == version, f"{name}: the two locks disagree"
    test_only = {name for pins in EXTRA_PINS.values() for name in pins} - set(RUNTIME_PINS)
    assert not test_only & set(RUNTIME), "a test or docs tool is in the image's lock"


def test_every_locked_distribution_has_its_hashes():
    for lock, entries in ((RUNTIME_LOCK, RUNTIME), (TEST_LOCK, TEST)):
        for name, (_, hashes, _) in entries.items():
            assert hashes, f"{lock.name}: {name} has no --hash"


def test_the_build_backend_is_locked_at_a_version_the_build_system_accepts():
    # The project is installed with --no-build-isolation: its backend comes from the lock.
    (backend,) = (Requirement(r) for r in PYPROJECT["build-system"]["requires"])
    for entries in (RUNTIME, TEST):
        version, _, _ = entries[canonicalize_name(backend.name)]
        assert backend.specifier.contains(version)


def test_the_locks_are_resolved_for_every_supported_python():
    for lock in (RUNTIME_LOCK, TEST_LOCK):
        command = lock.read_text().splitlines()[1]
        assert "--universal" in command and "--generate-hashes" in command, lock.name


def test_requires_python_and_the_classifiers_name_the_same_pythons():
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    for minor in range(8, 16):
        version = f"3.{minor}"
        assert requires.contains(f"{version}.5") == (version in SUPPORTED), version
    classifiers = PYPROJECT["project"]["classifiers"]
    declared = {c.rsplit(" :: ", 1)[1] for c in classifiers if re.search(r"Python :: 3\.\d+$", c)}
    assert declared == set(SUPPORTED)


def test_ci_runs_the_whole_suite_on_one_python_and_the_smoke_subset_on_the_others():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert any(line.split(" ||")[0] == "make test" for line in ci)  # the whole suite
    for version in SUPPORTED[1:]:
        assert any(line.startswith(f"make test-smoke SMOKE_PYTHON=python{version} ")
                   for line in ci)
    makefile = (ROOT / "Makefile").read_text()
    assert f"PYTHON ?= python{SUPPORTED[0]}" in makefile
    assert "--require-hashes --only-binary :all: $(TEST_LOCK)" in makefile
