"""The README stays a front door and the docs stay connected: the README is short, every relative
link of the README and docs/ reaches a file (and a heading, when it names one), every page of docs/
is linked from the README's Reference list, and the benchmark figures name no path of a machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_blocks import DOCS, README, REPO, headings, outside_fences, section

README_MAX_LINES = 350
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A home directory, a temporary directory, a virtual environment: where a benchmark ran, not what on.
MACHINE_PATH = re.compile(r"/work/|/root/|/home/|/Users/|/tmp/|\.venv|[A-Za-z]:\\")


def slug(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation (and emoji) dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for _, title in headings(path.read_text(encoding="utf-8")):
        base = slug(title)
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: name, name-1, name-2
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every markdown link outside code blocks and code spans."""
    found = []
    for number, line in outside_fences(path.read_text(encoding="utf-8")):
        text = re.sub(r"`[^`]*`", "``", line)
        found += [(number, target) for target in LINK.findall(text)]
    return found


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES - 1}): move reference text to docs/"
    )


def test_the_slug_is_githubs() -> None:
    assert slug("A state that lasts: `--state`") == "a-state-that-lasts---state"
    assert slug("Control API (not part of the service's API)") == "control-api-not-part-of-the-services-api"
    assert slug("## ❌ Failed — 1 of 5".lstrip("# ")) == "-failed--1-of-5"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check offline
            continue
        path_part, _, anchor = target.partition("#")
        file = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(REPO)}:{number}: {target}"
        if not file.exists():
            broken.append(f"{where}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{where}: no heading with anchor #{anchor} in {file.relative_to(REPO)}")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_in_the_readmes_reference_list() -> None:
    reference = section(README, "## Reference")
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if f"](docs/{p.name})" not in reference]
    assert not missing, f"README's Reference list does not link {missing}"


@pytest.mark.parametrize(
    "text",
    [section(README, "## Benchmarks"), (DOCS / "benchmarks.md").read_text(encoding="utf-8")],
    ids=["README Benchmarks", "docs/benchmarks.md"],
)
def test_the_benchmark_figures_name_no_path_of_a_machine(text: str) -> None:
    assert not MACHINE_PATH.findall(text), MACHINE_PATH.findall(text)
