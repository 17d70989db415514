"""The markdown summary: GitHub step summary, GitLab artifact, PR comment.

GitHub refuses a step summary above 1 MiB outright, so the output is always at most `max_bytes`
UTF-8 bytes: verdict first, then a table with failures first (capped in rows and bytes), then a
<details> block per failure (capped), each cut announced. Every text from the service or the checks
is escaped so that it cannot break the table, a code fence or the HTML around it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from urllib.parse import quote

from runner.core.text import sanitize
from runner.core.words import counted, plural
from runner.job.digest import Digest, Item, digest
from runner.job.history import describe as describe_history
from runner.job.history import describe_unstable
from runner.job.known import UNTOLD
from runner.job.outcome import (
    CheckRef,
    ErrorGroupOutcome,
    Outcome,
    ResultOutcome,
    SessionOutcome,
    SlowerCheck,
)
from runner.reports.text import AnalysisGap, clean, human_duration, one_line, shown_analysis, utc_minute

MAX_BYTES = 1_000_000
MAX_ROWS = 1_000
MAX_DETAILS = 100
MAX_SESSIONS_LISTED = 20
MAX_CELL = 200  # characters per table cell
MAX_ERROR = 8 * 1024  # characters of an error in a details block
MAX_FIELD = 4 * 1024  # characters of one analysis field
TABLE_SHARE = 0.6  # of the bytes left after the header, when details follow
MAX_CHANGES = 20  # checks listed per kind of change against the baseline

STATUS = {
    "failed": "❌ failed",
    "error": "❗ error",
    "running": "⏳ did not finish",
    "degraded": "🐢 degraded",
    "flaky": "🔁 flaky",
    "cancelled": "⏹️ cancelled",
    "passed": "✅ passed",
}
ICONS = {
    "passed": "✅",
    "failed": "❌",
    "no-match": "⚠️",
    "timeout": "⏱️",
    "service-error": "⚠️",
    "usage-error": "⚠️",
    "build-not-started": "⚠️",
    "interrupted": "⏹️",
    "detached": "⏳",
}

# HTML-significant characters become entities (valid in markdown and inside raw HTML blocks);
# markdown punctuation that opens a construct is backslash-escaped.
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})
_MARKDOWN = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\\": "\\\\",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "|": "\\|",
        "~": "\\~",
        "#": "\\#",
        "!": "\\!",
    }
)
_BACKTICKS = re.compile(r"`{3,}")


def html_line(text: str | None, limit: int) -> str:
    """The first line of `text` inside raw HTML (a <summary>): sanitised, entities for <, >, &, "."""
    return one_line(text, limit).translate(_HTML)


def escape_cell(text: str | None, limit: int = MAX_CELL) -> str:
    """A table cell: one line, no `|`, no markdown or HTML that could spill out of the cell."""
    return sanitize(text, limit=limit, lines="join").translate(_MARKDOWN)


def escape_text(text: str | None, limit: int = MAX_FIELD) -> str:
    """Prose from the service as a markdown paragraph with its line breaks kept, nothing else."""
    lines = [line.strip().translate(_MARKDOWN) for line in clean(text, limit).split("\n")]
    return "  \n".join(line for line in lines if line)


def fenced(text: str | None, limit: int = MAX_ERROR) -> str:
    """A code block whose fence is longer than any backtick run inside, so it cannot be closed early."""
    body = clean(text, limit).rstrip("\n") or "(empty)"
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def safe_url(url: str | None) -> str | None:
    """An http(s) URL safe inside `[..](..)`: spaces, brackets, parentheses, pipes encoded."""
    if not url:
        return None
    url = clean(url, 2048).strip()
    if not re.match(r"https?://", url, re.IGNORECASE):
        return None
    return quote(url, safe=":/?#@!$&'*+,;=%-._~")


def link(url: str | None, label: str = "open") -> str:
    target = safe_url(url)
    return f"[{label}]({target})" if target else "–"


class _Out:
    """Parts of the document with a running UTF-8 size, so that caps are decided while building."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str, limit: int | None = None) -> bool:
        size = len(text.encode("utf-8"))
        if limit is not None and self.size + size > limit:
            return False
        self.parts.append(text)
        self.size += size
        return True


def _header(d: Digest) -> list[str]:
    outcome = d.outcome
    counts = d.counts
    icon = ICONS.get(outcome.verdict)
    headline = escape_cell(d.headline, 600)
    lines = [f"## {icon} {headline}" if icon else f"## {headline}", ""]
    lines.append(f"**Exit code {int(d.exit_code)}** · " + " · ".join(d.count_parts()))
    lines += _known_lines(d)
    lines += _baseline_lines(d)
    lines += _quarantine_lines(d)
    lines += _unstable_lines(d)
    if d.gate.fail_on_degraded and counts.degraded:
        lines.append("")
        lines.append("Degraded checks fail this run (failOnDegraded).")
    if outcome.partial:
        lines.append("")
        lines.append(
            "> [!WARNING]\n> **Partial results:** the run ended before every session finished; "
            "this report shows what was known at that moment."
        )
    if outcome.message:
        lines.append("")
        lines.append(f"> **{escape_text(one_line(outcome.message, 1000))}**")

    sessions = outcome.sessions
    if sessions:
        lines.append("")
        listed = []
        for session in sessions[:MAX_SESSIONS_LISTED]:
            label = escape_cell(f"{session.name} [{session.runLocation}]", 120)
            target = safe_url(session.link)
            text = f"[{label}]({target})" if target else label
            if session.status:
                text += f" ({escape_cell(session.status, 40)})"
            if session.origin:  # a merged run: where the session ran
                text += f" from {escape_cell(session.origin.label, 200)}"
            listed.append(text)
        more = len(sessions) - MAX_SESSIONS_LISTED
        lines.append("**Sessions:** " + " · ".join(listed) + (f" · and {more} more" if more > 0 else ""))
        problems = [s for s in sessions if s.problem][:MAX_SESSIONS_LISTED]
        for session in problems:
            where = escape_cell(f"{session.name} [{session.runLocation}]", 120)
            lines.append(f"- **{where}:** {escape_cell(session.problem, 500)}")

    commit = outcome.commit
    facts = []
    if commit.commitId:
        facts.append(f"**Commit** {escape_cell(commit.commitId[:12], 40)}")
    if commit.branchName:
        facts.append(f"**Branch** {escape_cell(commit.branchName, 200)}")
    if commit.environment:
        facts.append(f"**Environment** {escape_cell(commit.environment, 100)}")
    if facts:
        lines.append("")
        lines.append(" · ".join(facts))
    lines.append("")
    return lines


def _known_lines(d: Digest) -> list[str]:
    """What the failures are in known/new words, and why a failOn: new gate passed or failed."""
    if not d.failures:
        return []
    new, known, untold = len(d.new_failures), len(d.known_failures), len(d.untold)
    line = (
        f"**{counted(new, 'new failure')}** (in this build) · "
        f"**{known} known** (already failing before this build)"
    )
    if untold:
        line += f" · **{untold} {UNTOLD}** (new or known: no history to compare; never forgiven)"
    lines = ["", line]
    if d.gate.fail_on == "new" and d.forgiven:
        n = len(d.forgiven)
        these = plural(n, "this known failure", f"these {counted(n, 'known failure')}")
        if d.failing:
            lines += [
                "",
                f"The gate fails on new failures only (failOn: new): {these} did not fail it, "
                "the others did. All are listed below.",
            ]
        else:
            lines += [
                "",
                f"**The gate passed because it fails on new failures only (failOn: new):** {these} "
                f"already failed before this build and did not fail it. {plural(n, 'It', 'They')} "
                f"{plural(n, 'is')} listed below under *Already failing before this build*.",
            ]
    unforgiven = [i for i in d.failing if i.history is not None and i.history.novelty == "known"]
    if d.gate.fail_on == "new" and unforgiven:
        lines += [
            "",
            f"{counted(len(unforgiven), 'known result')} still failed the gate: failOn: new forgives "
            "known failed checks only, never errors, unfinished or cancelled checks.",
        ]
    return lines


def _marks(recent: str) -> str:
    """The history's marks of recent runs, only its own characters (a results.json read back is text
    from outside)."""
    return "".join(c for c in recent if c in ".fdX")[:40]


def _quarantined(item: Item) -> str:
    """'quarantined until 2026-12-15, owner @team: why' of a result whose check is quarantined."""
    held = item.result.quarantined
    if held is None:
        return ""
    why = f": {held.reason}" if held.reason else ""
    return escape_text(one_line(f"quarantined until {held.until.isoformat()}, owner {held.owner}{why}", 600))


def _quarantine_lines(d: Digest) -> list[str]:
    """The quarantined failures (not gating), the expired entries (gating again), and the quarantined
    checks ready to leave."""
    lines: list[str] = []
    if d.quarantined:
        lines += ["", f"**Quarantined ({len(d.quarantined)})** — failed, but did not fail the gate:", ""]
        for item in d.quarantined[:MAX_CHANGES]:
            name = escape_cell(f"{item.result.name} [{item.location}]")
            lines.append(f"- {name}: {item.label} — {_quarantined(item)}")
        if len(d.quarantined) > MAX_CHANGES:
            lines.append(f"- and {len(d.quarantined) - MAX_CHANGES} more (see results.json)")
    if d.expired_quarantine:
        lines += ["", f"**Quarantine expired ({len(d.expired_quarantine)})** — these checks gate again:", ""]
        for entry in d.expired_quarantine[:MAX_CHANGES]:
            lines.append(
                f"- {escape_cell(entry.check)}: owner {escape_cell(entry.owner, 200)}, "
                f"until {entry.until.isoformat()}"
            )
    if d.ready_to_leave:
        ready = len(d.ready_to_leave)
        lines += ["", f"**Ready to leave quarantine ({ready})** — passed every recent run:", ""]
        for item in d.ready_to_leave[:MAX_CHANGES]:
            held = item.result.quarantined
            owner = f" (owner {escape_cell(held.owner, 200)})" if held else ""
            lines.append(f"- {escape_cell(f'{item.result.name} [{item.location}]')}{owner}")
    return lines


def _unstable_lines(d: Digest) -> list[str]:
    """Checks that pass now though their recent runs did not all pass (the state file's history)."""
    if not d.unstable:
        return []
    lines = ["", f"**Unstable lately ({len(d.unstable)})** — passing now:", ""]
    for item in d.unstable[:MAX_CHANGES]:
        history = item.result.history
        assert history is not None
        name = escape_cell(f"{item.result.name} [{item.location}]")
        lines.append(f"- {name}: {describe_unstable(history)} `{_marks(history.recent)}`")
    if len(d.unstable) > MAX_CHANGES:
        lines.append(f"- and {len(d.unstable) - MAX_CHANGES} more (see results.json)")
    return lines


def _refs(
    refs: Sequence[CheckRef], title: str, describe: Callable[[CheckRef], str] | None = None
) -> list[str]:
    if not refs:
        return []
    lines = [f"**{title} ({len(refs)})**", ""]
    for ref in refs[:MAX_CHANGES]:
        text = escape_cell(f"{ref.name} [{ref.runLocation or '–'}]")
        if describe is not None:
            text += describe(ref)
        lines.append(f"- {text}")
    if len(refs) > MAX_CHANGES:
        lines.append(f"- and {len(refs) - MAX_CHANGES} more (see results.json)")
    lines.append("")
    return lines


def _slower(ref: CheckRef) -> str:
    if not isinstance(ref, SlowerCheck):
        return ""
    then, now = human_duration(ref.baselineSeconds), human_duration(ref.durationSeconds)
    return f": {then} in the baseline, {now} now"


def _item_refs(items: Sequence[Item]) -> list[CheckRef]:
    return [CheckRef(checkId=i.result.checkId, name=i.result.name, runLocation=i.location) for i in items]


def _baseline_lines(d: Digest) -> list[str]:
    """The changes against the baseline, first thing after the verdict; or why there is no baseline."""
    baseline = d.baseline
    if baseline is None:
        return []
    path = escape_cell(baseline.path, 300)
    if not baseline.used:
        return ["", f"> [!WARNING]\n> **Baseline not used:** {escape_text(one_line(baseline.warning, 1000))}"]
    lines = [
        "",
        f"### Changes since the baseline ({d.changes})",
        "",
        f"Compared with {path}, check by check (check id and location).",
        "",
    ]
    if baseline.warning:
        lines[-1:-1] = [f"> [!NOTE]\n> {escape_text(one_line(baseline.warning, 1000))}", ""]
    lines += _refs(_item_refs(d.newly_failing), "Newly failing")
    lines += _refs(_item_refs(d.fixed), "Fixed")
    lines += _refs(d.slower, "Slower", _slower)
    lines += _refs(d.missing, "Missing now")
    if not (d.newly_failing or d.fixed or d.slower or d.missing):
        lines += ["No check newly failing, fixed, slower or missing.", ""]
    if d.still_failing:
        lines += [f"{len(d.still_failing)} still failing since the baseline.", ""]
    return lines[:-1] if lines[-1] == "" else lines


def _row(result: ResultOutcome, session: SessionOutcome) -> str:
    location = result.runLocation or session.runLocation
    attempts = str(result.attempts) if result.attempts else "–"
    status = STATUS.get(result.verdict, escape_cell(result.verdict, 40))
    if result.quarantined is not None and result.verdict != "passed":
        status += " (quarantined)"
    cells = (
        status,
        escape_cell(result.name or result.checkId or result.id),
        escape_cell(result.checkType, 40) or "–",
        escape_cell(location, 60),
        human_duration(result.durationSeconds),
        attempts,
        link(result.link),
    )
    return "| " + " | ".join(cells) + " |\n"


def _analysis(group: ErrorGroupOutcome, seen: dict[str, str]) -> str:
    gid = escape_cell(group.id, 100)
    if group.id in seen:
        return f"**Root cause analysis:** see error group {gid} above ({seen[group.id]})."
    analysis = shown_analysis(group)
    if isinstance(analysis, AnalysisGap):
        seen[group.id] = f"no analysis: {analysis.state}"
        return f"**Error group {gid}** — {escape_text(analysis.line)}"
    seen[group.id] = escape_cell(analysis.classification, 80)
    parts = [
        f"**Root cause analysis** (error group {gid})",
        f"**Classification:** {escape_cell(analysis.classification, 200)}",
        f"**Root cause:** {escape_text(analysis.rootCause)}",
        f"**User impact:** {escape_text(analysis.userImpact)}",
    ]
    if analysis.codeFix:
        parts.append("**Code fix:**\n\n" + fenced(analysis.codeFix, MAX_FIELD))
    if analysis.evidence:
        items = []
        for evidence in analysis.evidence[:20]:
            item = f"- {escape_cell(evidence.description, 1000)}"
            if evidence.artifacts:
                names = ", ".join(f"{a.name} ({a.type})" for a in evidence.artifacts[:20])
                item += f" — artifacts: {escape_cell(names, 500)}"
            items.append(item)
        parts.append("**Evidence:**\n\n" + "\n".join(items))
    if analysis.referenceLinks:
        refs = [
            f"- {link(ref.url, escape_cell(ref.title, 200) or 'link')}"
            for ref in analysis.referenceLinks[:20]
        ]
        parts.append("**Reference links:**\n\n" + "\n".join(refs))
    return "\n\n".join(parts)


def _details(
    outcome: Outcome,
    item: Item,
    groups: dict[str, ErrorGroupOutcome],
    seen: dict[str, str],
) -> str:
    result = item.result
    title = html_line(f"{result.name or result.id} [{item.location}]", 200)
    first = html_line(result.error, 160)
    summary = f"{STATUS.get(result.verdict, '')} <b>{title}</b>" + (f" — {first}" if first else "")
    facts = [f"status {escape_cell(result.status, 40)}", human_duration(result.durationSeconds)]
    if result.attempts > 1:
        facts.append(f"{result.attempts} attempts")
    if result.link and safe_url(result.link):
        facts.append(link(result.link, "result"))
    parts = [f"<details><summary>{summary}</summary>", " · ".join(facts)]
    history = _history(item)
    if history:
        parts.append(history)
    if result.verdict == "running":
        why = one_line(outcome.message)
        parts.append("The run ended before this check finished" + (f": {escape_text(why)}" if why else "."))
    if result.error:
        parts.append(fenced(result.error))
    if result.attachments:  # a browser check's screenshot and trace, on this machine
        files = ", ".join(
            f"{escape_cell(a.name, 40)}: {escape_cell(a.path, 300)}" for a in result.attachments[:10]
        )
        parts.append(f"Files: {files}")
    if result.tests:  # a Playwright check suite's tests, each with its outcome and runs
        shown = "; ".join(
            f"{escape_cell(t.name, 200)}: {escape_cell(t.status, 30)}"
            + (f" ({t.runs} runs)" if t.runs > 1 else "")
            for t in result.tests[:30]
        )
        more = f"; {len(result.tests) - 30} more" if len(result.tests) > 30 else ""
        parts.append(f"Tests: {shown}{more}")
    if not result.error and result.verdict != "running":
        parts.append("No error message was reported.")
    if not result.errorGroupIds:
        parts.append("No error group, so no root cause analysis.")
    for group_id in result.errorGroupIds[:5]:
        group = groups.get(group_id)
        if group is None:
            parts.append(f"Error group {escape_cell(group_id, 100)} was not fetched.")
        else:
            parts.append(_analysis(group, seen))
    parts.append("</details>")
    return "\n\n".join(parts) + "\n\n"


def _history(item: Item) -> str:
    """The digest's known/new history of a failure: the decision and why, first and last seen, and
    whether failOn: new forgave it."""
    history = item.history
    if history is None:
        return ""
    words = [f"**{history.label.capitalize()}:** {escape_text(history.reason)}"]
    if history.first_seen is not None:
        seen = f"first seen {utc_minute(history.first_seen)}"
        if history.last_seen_before is not None:
            seen += f", last seen before this run {utc_minute(history.last_seen_before)}"
        words.append(seen)
    if history.baseline == "new-check":
        words.append("not in the baseline")
    if item.forgiven:
        words.append("**Did not fail the gate** (failOn: new forgives known failures)")
    if item.excused_by_quarantine:
        words.append(f"**Did not fail the gate:** {_quarantined(item)}")
    recorded = item.result.history
    if recorded is not None:
        words.append(f"{escape_text(describe_history(recorded))} `{_marks(recorded.recent)}`")
    return " · ".join(words)


def _sections(d: Digest) -> list[tuple[str, tuple[Item, ...]]]:
    """The failures under their headings: new ones first, then those that were already there."""
    if not d.new_failures and not d.known_failures:
        return [("Failures", d.untold)]
    sections = [
        ("New in this build", d.new_failures),
        ("Already failing before this build", d.known_failures),
        ("Failing, new or known could not be told", d.untold),
    ]
    return [(title, items) for title, items in sections if items]


def _cut(text: str, max_bytes: int) -> str:
    """The last resort: cut on a UTF-8 character boundary and say so."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    notice = f"\n\n**[Summary cut at {max_bytes} bytes: see junit.xml and results.json]**\n"
    room = max_bytes - len(notice.encode("utf-8"))
    if room < 0:
        return data[:max_bytes].decode("utf-8", "ignore")
    return data[:room].decode("utf-8", "ignore") + notice


def render_markdown(outcome: Outcome, max_bytes: int = MAX_BYTES) -> str:
    """The summary as markdown of at most `max_bytes` UTF-8 bytes."""
    max_bytes = max(0, max_bytes)
    reserve = min(4096, max_bytes // 4)  # for the notices at the end
    budget = max_bytes - reserve
    d = digest(outcome)

    out = _Out()
    out.add("\n".join(_header(d)) + "\n")
    notices: list[str] = []

    total = d.counts.total
    if total:
        table_limit = budget
        if d.failures:
            table_limit = out.size + int(max(0, budget - out.size) * TABLE_SHARE)
        out.add("| Status | Check | Type | Location | Duration | Attempts | Link |\n")
        out.add("|---|---|---|---|---|---|---|\n")
        shown = failing_shown = 0
        for item in d.rows(MAX_ROWS):
            if not out.add(_row(item.result, item.session), table_limit):
                break
            shown += 1
            failing_shown += item.fails_gate
        out.add("\n")
        if shown < total:
            failing_left = len(d.failing) - failing_shown
            notices.append(
                f"_Table shows {shown} of {counted(total, 'result')}; {total - shown} left out "
                f"({failing_left} of them failing). Every result is in junit.xml and results.json._"
            )
            out.add(notices[-1] + "\n\n")

    if d.failures:
        seen: dict[str, str] = {}
        group_maps: dict[int, dict[str, ErrorGroupOutcome]] = {}
        detailed = 0
        for title, items in _sections(d):
            if detailed >= MAX_DETAILS or not out.add(f"### {title} ({len(items)})\n\n", budget):
                break
            for item in items:
                session = item.session
                groups = group_maps.get(id(session))
                if groups is None:
                    groups = group_maps[id(session)] = {g.id: g for g in session.errorGroups}
                if detailed >= MAX_DETAILS or not out.add(_details(outcome, item, groups, seen), budget):
                    break
                detailed += 1
        if detailed < len(d.failures):
            more = len(d.failures) - detailed
            notices.append(
                f"_{counted(more, 'more failing result')} {plural(more, 'is')} not detailed here; "
                "see junit.xml and results.json._"
            )
            out.add(notices[-1] + "\n")

    return _cut("".join(out.parts), max_bytes)
