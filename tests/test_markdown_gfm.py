"""The markdown as GitHub renders it: summary.md and the pull-request comment through cmark-gfm.

GitHub renders markdown with its fork of cmark (tables, autolinks, raw HTML kept), then keeps an
allowlist of HTML. `cmarkgfm` is that renderer; the HTML it gives is read back here and checked as a
reviewer would: the results table has its columns in every row, an escaped cell shows the hostile
name as text, each failure is one <details> with its <summary>, links go where they should and
nowhere else, and no element outside GitHub's allowlist appears.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from outcome_factory import BASE_URL, STARTED, error_group, outcome, result, session
from platform_fake import GITHUB_TOKEN, FakePlatform

from runner.cli.main import main
from runner.job.baseline import Baseline, mark_baseline
from runner.job.known import mark_known
from runner.job.outcome import Outcome
from runner.reports import render_json, render_markdown

HOSTILE = "Gone | <img src=x onerror=alert(1)> ``` [x](javascript:alert(1)) *bold* _it_ ~~s~~ #1"
FENCE_ERROR = "Error: bad\n```\n</details><script>alert(1)</script>\n````\nend of error"
ODD_LINK = f"{BASE_URL}/results/a b(1)|x"
# The elements our markdown may produce: GitHub keeps them all (its sanitizer allowlist).
ALLOWED = {
    "h2", "h3", "p", "strong", "em", "code", "pre", "a", "ul", "li", "blockquote", "br",
    "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "b", "sub",
}  # fmt: skip
VOID = frozenset({"br", "hr", "img", "input"})  # HTML elements without an end tag
COLUMNS = ["Status", "Check", "Type", "Location", "Duration", "Attempts", "Link"]


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self, tag: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if tag is None or child.tag == tag:
                    found.append(child)
                found += child.iter(tag)
        return found

    def elements(self) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node)]


class Tree(HTMLParser):
    """The rendered HTML as a tree; void elements close at once."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("root", {}, None)
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"</{tag}> closes nothing"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def github_html(markdown: str) -> Node:
    """What GitHub shows: cmark-gfm with raw HTML kept (GitHub then filters by its allowlist)."""
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return Tree(html).root


def hostile_outcome() -> Outcome:
    known = error_group("eg-known")
    known.firstSeen, known.lastSeen = STARTED - timedelta(days=3), STARTED - timedelta(hours=5)
    new = error_group("eg-new", message=FENCE_ERROR)
    new.firstSeen = new.lastSeen = STARTED + timedelta(seconds=5)
    results = [
        result("failed", "Checkout flow", group_ids=["eg-known"], link=ODD_LINK),
        result("failed", HOSTILE, group_ids=["eg-new"], error=FENCE_ERROR),
        result("passed", "Home | page", link="javascript:alert(1)"),
        result("passed", "Login API"),
    ]
    marked = mark_known(outcome([session(results, [known, new])]))
    then = [result("failed", "Checkout flow"), result("failed", "Login API"), result("passed", HOSTILE)]
    then.append(result("passed", "Gone <b>"))
    return mark_baseline(marked, Baseline("main/results.json", then))


def check_rendered(root: Node, failures: int) -> None:
    tags = {node.tag for node in root.iter()}
    assert tags <= ALLOWED, f"not kept by GitHub or not ours: {tags - ALLOWED}"

    # The results table: the columns, and every row with as many cells (an unescaped | adds one).
    (table,) = root.iter("table")
    assert [th.text().strip() for th in table.iter("th")] == COLUMNS
    rows = [tr for tr in table.iter("tr") if tr.iter("td")]
    assert len(rows) == 4 and all(len(tr.iter("td")) == len(COLUMNS) for tr in rows)
    names = [tr.iter("td")[1].text() for tr in rows]
    assert names == ["Checkout flow", HOSTILE, "Home | page", "Login API"]  # shown as text, as named
    links = {tr.iter("td")[1].text(): tr.iter("td")[6] for tr in rows}
    (odd,) = links["Checkout flow"].iter("a")
    assert odd.attrs["href"] == f"{BASE_URL}/results/a%20b%281%29%7Cx" and odd.text() == "open"
    assert links["Home | page"].text() == "–"  # a javascript: link is no link

    # Every failure is one <details> whose first element is its <summary>; nothing else nests in it.
    details = root.iter("details")
    assert len(details) == failures
    for block in details:
        assert block.elements()[0].tag == "summary"
        assert not block.iter("details") and not block.iter("h3") and not block.iter("table")
    summaries = [block.elements()[0].text() for block in details]
    assert any(f"{HOSTILE} [us-east-1]" in text for text in summaries)
    # The error with fences and HTML inside stays one code block, whole, as text.
    hostile = next(b for b in details if HOSTILE in b.elements()[0].text())
    code = hostile.iter("pre")[0]  # the error's; the analysis' code fix follows
    assert code.text().rstrip("\n") == FENCE_ERROR

    # Links go to http(s) addresses only; the hostile name's [x](javascript:...) is not one.
    for anchor in root.iter("a"):
        assert anchor.attrs.get("href", "").startswith(("http://", "https://")), anchor.attrs
    # The changes against the baseline: hostile names escaped in the list items too.
    items = [li.text() for li in root.iter("li")]
    assert {f"{HOSTILE} [us-east-1]", "Login API [us-east-1]", "Gone <b> [us-east-1]"} <= set(items)


def test_summary_md_renders_as_intended_on_github() -> None:
    md = render_markdown(hostile_outcome())
    root = github_html(md)
    check_rendered(root, failures=2)
    (headline,) = root.iter("h2")
    assert headline.text() == "❌ Failed — 2 of 4 checks failed the gate (2 failed)"
    headings = [h.text() for h in root.iter("h3")]
    assert headings[0] == "Changes since the baseline (1 newly failing, 1 fixed, 0 slower, 1 missing)"
    assert headings[1:] == ["New in this build (1)", "Already failing before this build (1)"]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "GITLAB", "CI_", "TESTSESSION_", "RUNNER_")) or name == "CI":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    with FakePlatform() as fake:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 12}}))
        values = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_TOKEN": GITHUB_TOKEN,
            "GITHUB_API_URL": fake.url,
            "GITHUB_SERVER_URL": "https://github.test",
            "GITHUB_REPOSITORY": "shop/web",
            "GITHUB_RUN_ID": "777",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_HEAD_REF": "feature/checkout",
        }
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        yield fake


def test_the_pull_request_comment_renders_as_intended_on_github(github: Any, tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(render_json(hostile_outcome()))
    assert main(["comment", str(path)]) == 0
    [posted] = github.platform.thread("shop/web#12")
    body = posted["body"]
    root = github_html(body)
    check_rendered(root, failures=2)
    assert "testsession-runner:comment" not in root.text()  # the marker is an HTML comment: hidden
    (footer,) = root.iter("sub")
    (job,) = footer.iter("a")
    assert job.attrs["href"] == "https://github.test/shop/web/actions/runs/777"
