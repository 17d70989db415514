"""The package is complete: the sdist, the wheel built from the tree (`pip install .`) and the wheel built
from the sdist (a PyPI install, `python -m build`) each hold exactly the files git tracks under runner/.
The code reads .cjs, .mjs and .yml files beside its modules at run time: a wheel without them made every
BROWSER and MULTI_STEP check an ERROR for anyone who installed without `-e` (issue 39).

The builds run setuptools' own backend (build_meta, as pip and `build` call it) on a copy of the tracked
files, so neither the checkout's egg-info nor its __pycache__ takes part: ~2 s."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from tracked import fresh_clone, tracked

BUILD = """
import sys
from setuptools import build_meta
print(getattr(build_meta, sys.argv[1])(sys.argv[2]))
"""


def build(hook: str, source: Path, out: Path) -> Path:
    """`hook` (build_sdist or build_wheel) of setuptools' backend in `source`: the file it wrote."""
    out.mkdir()
    have = importlib.metadata.version("setuptools")
    assert int(have.split(".")[0]) >= 77, f"setuptools {have}: >= 77 needed (pip install -e '.[test]')"
    done = subprocess.run([sys.executable, "-c", BUILD, hook, str(out)], cwd=source, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The runner/ files of each package, by how it was built."""
    work = tmp_path_factory.mktemp("package")
    source = fresh_clone(work / "source")
    for package in ("runner", "runner/checks/protocols/browser"):  # a checkout that has run the tests
        (source / package / "__pycache__").mkdir()
        (source / package / "__pycache__" / "setup.cpython-311.pyc").write_bytes(b"")
    sdist = build("build_sdist", source, work / "sdist")
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        sdist_files = [n.split("/", 1)[1] for n in archive.getnames() if archive.getmember(n).isfile()]
        archive.extractall(work / "unpacked", filter="data")
    from_tree = build("build_wheel", source, work / "wheel")
    from_sdist = build("build_wheel", work / "unpacked" / top, work / "wheel-from-sdist")

    def runner_files(names: list[str]) -> list[str]:
        return sorted(n for n in names if n.startswith("runner/") and not n.endswith("/"))

    found = {"sdist": runner_files(sdist_files)}
    for label, wheel in (("wheel", from_tree), ("wheel from the sdist", from_sdist)):
        with zipfile.ZipFile(wheel) as archive:
            found[label] = runner_files(archive.namelist())
    return found


@pytest.mark.parametrize("label", ["sdist", "wheel", "wheel from the sdist"])
def test_the_package_holds_every_file_git_tracks_under_runner_and_nothing_else(
    packages: dict[str, list[str]], label: str
) -> None:
    expected = tracked("runner")
    shipped = packages[label]
    assert [n for n in expected if n not in shipped] == [], f"tracked, missing from the {label}"
    assert [n for n in shipped if n not in expected] == [], f"in the {label}, not tracked"


def test_the_files_the_browser_checks_read_are_tracked() -> None:
    """The comparison above is only as good as the tracked list: the files issue 39 found missing."""
    names = tracked("runner")
    for needed in ("browser/fixtures.cjs", "browser/reporter.cjs", "playwright/overlay.cjs"):
        assert f"runner/checks/protocols/{needed}" in names
