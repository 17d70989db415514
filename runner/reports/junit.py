"""JUnit XML for CI test reporters (GitLab, Jenkins, dorny, mikepenz, EnricoMi).

Written as text, element by element, with the escaping XML 1.0 asks for (`_xml_text`, `_xml_attr`),
rather than with the junit-xml package (it writes a `disabled` attribute junit-10.xsd rejects,
raises on lone surrogates and U+FFFE/U+FFFF, and is several times slower) or an ElementTree (whose
tree and pure-Python serialiser took most of the time and memory of a 100,000-result report). Every
text passes the one sanitiser first, so no character XML cannot hold reaches the file.

Layout: <testsuites> holds one <testsuite> per session (name "<session> [<location>]") with
<properties>, and one <testcase> per final check result, named "<check> [<location>]" so that the
same check in two locations stays two tests for readers that key on classname + name.
Only elements and attributes that junit-10.xsd allows are written.
"""

from __future__ import annotations

import contextlib
import math
import re

from runner.core.text import sanitize
from runner.core.words import counted
from runner.job.digest import Item, digest
from runner.job.outcome import ErrorGroupOutcome, Outcome, ResultOutcome, SessionOutcome
from runner.job.policy import Gate, JunitKind, junit_kind
from runner.reports.text import (
    MAX_TEXT,
    AnalysisGap,
    cap,
    clean,
    format_seconds,
    one_line,
    shown_analysis,
)

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'

# The bodies of all failures together should stay well under GitLab's 30 MB per report, so with
# many failing results each body gets a smaller share (never below MIN_TEXT).
TEXT_BUDGET = 20 * 1024 * 1024
MIN_TEXT = 2 * 1024
MAX_NAME = 1000  # names and attributes: readers show them on one line
MAX_GROUPS_PER_RESULT = 5

INDENT = "  "


def _xml_text(text: str) -> str:
    """Element text: &, < and > as entities (the text is sanitised: no character XML cannot hold)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _xml_attr(text: str) -> str:
    """An attribute value in double quotes: also the quote, and line breaks and tabs as references
    (a parser would turn them into spaces)."""
    text = _xml_text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if not text.isprintable():
        text = text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    return text


def _element(depth: int, tag: str, attributes: dict[str, str], text: str | None = None) -> str:
    """One element on its own line at `depth`, with its text or empty (`<tag ... />`)."""
    pairs = "".join(f' {name}="{_xml_attr(value)}"' for name, value in attributes.items())
    if text:
        return f"{INDENT * depth}<{tag}{pairs}>{_xml_text(text)}</{tag}>"
    return f"{INDENT * depth}<{tag}{pairs} />"


def _parent(depth: int, tag: str, attributes: dict[str, str], children: list[str]) -> list[str]:
    """An element whose children are lines already written at depth + 1."""
    if not children:
        return [_element(depth, tag, attributes)]
    pairs = "".join(f' {name}="{_xml_attr(value)}"' for name, value in attributes.items())
    return [f"{INDENT * depth}<{tag}{pairs}>", *children, f"{INDENT * depth}</{tag}>"]


def _text_limit(outcome: Outcome) -> int:
    bodies = 1 + sum(1 for s in outcome.sessions for r in s.results if r.verdict != "passed")
    return max(MIN_TEXT, min(MAX_TEXT, TEXT_BUDGET // bodies))


def _attr(text: str | None, limit: int = MAX_NAME) -> str:
    # Attributes are single-line for every reader; _xml_attr escapes what remains.
    return sanitize(text, limit=limit, lines="join")


def _named(name: str | None, suffix: str) -> str:
    """ "<name> [<location>]" (`suffix`: " [<location>]"), at most MAX_NAME long: a long name is cut,
    never the location, which keeps the same check in two locations two distinct tests."""
    head = _attr(name, 4 * MAX_NAME)
    room = MAX_NAME - len(suffix)
    if len(head) > room:
        head = head[: room - 1].rstrip() + "…"
    return head + suffix


_TYPE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_UPPER_WORD = re.compile(r"[A-Z][A-Z0-9_]*")


def _type(value: str | None, fallback: str) -> str:
    """A `type` attribute. GitLab reads JUnit with ActiveSupport's Hash.from_xml, for which `type`
    declares a conversion: "yaml"/"symbol" reject the whole report, "integer", "boolean", "date",
    "file", ... turn the element's text into 0, false, a date. Those names are case-sensitive and
    none is upper case, so an upper-case word (FAILED, BACKEND_ERROR) is kept; anything else from the
    service is prefixed ("testsession.yaml" is no type ActiveSupport knows)."""
    slug = _TYPE_UNSAFE.sub("_", value or "").strip("_.-")[:100]
    if not slug:
        return fallback
    return slug if _UPPER_WORD.fullmatch(slug) else f"testsession.{slug}"


def _analysis_text(group: ErrorGroupOutcome, limit: int) -> str:
    """The error group's root cause analysis as plain text, or why there is none."""
    head = f"Error group {group.id}"
    if group.count:
        head += f" ({counted(group.count, 'result')})"
    lines = [head]
    analysis = shown_analysis(group)
    if isinstance(analysis, AnalysisGap):
        lines.append(analysis.line)
        return "\n".join(lines)
    lines.append(f"Classification: {clean(analysis.classification, limit)}")
    lines.append(f"Root cause: {clean(analysis.rootCause, limit)}")
    lines.append(f"User impact: {clean(analysis.userImpact, limit)}")
    if analysis.codeFix:
        lines.append(f"Code fix:\n{clean(analysis.codeFix, limit)}")
    if analysis.evidence:
        lines.append("Evidence:")
        for evidence in analysis.evidence:
            item = f"- {clean(evidence.description, limit)}"
            if evidence.artifacts:
                names = ", ".join(f"{a.name} ({a.type})" for a in evidence.artifacts)
                item += f" [artifacts: {clean(names, limit)}]"
            lines.append(item)
    if analysis.referenceLinks:
        lines.append("Reference links:")
        for link in analysis.referenceLinks:
            lines.append(f"- {clean(link.title, MAX_NAME)}: {clean(link.url, MAX_NAME)}")
    if group.analysis and (group.analysis.provider or group.analysis.model):
        by = " / ".join(x for x in (group.analysis.provider, group.analysis.model) if x)
        lines.append(f"Analysis by: {clean(by, MAX_NAME)}")
    return cap("\n".join(lines), limit)


FORGIVEN = "failOn: new forgives known failures"

# The `type` of a failure or error: a fixed vocabulary, never text from the service.
TYPES = {
    "failed": "FAILED",
    "error": "ERROR",
    "running": "DID_NOT_FINISH",
    "cancelled": "CANCELLED",
    "degraded": "DEGRADED",
    "flaky": "FLAKY",
    "passed": "PASSED",
}


def history_lines(result: ResultOutcome) -> list[str]:
    """Known/new, firstSeen and the baseline mark as `testsession.<key>=<value>` lines for the
    testcase's system-out, for tools that read them there: Jenkins and EnricoMi show a testcase's
    system-out, and junit-10.xsd has no testcase <properties>. GitLab reads a testcase's system-out
    only for an `[[ATTACHMENT|path]]` of a failed test, so what a reader there must see (new or
    known, in words) is in the failure's text, after the error. Values are a fixed vocabulary or
    ISO 8601 times."""
    lines = []
    if result.known is not None:
        lines.append(f"testsession.known={'true' if result.known else 'false'}")
    if result.firstSeen is not None:
        lines.append(f"testsession.firstSeen={result.firstSeen.isoformat(timespec='seconds')}")
    if result.lastSeenBefore is not None:
        lines.append(f"testsession.lastSeenBefore={result.lastSeenBefore.isoformat(timespec='seconds')}")
    if result.baseline is not None:
        lines.append(f"testsession.baseline={result.baseline}")
    if result.quarantined is not None:
        lines.append(f"testsession.quarantinedUntil={result.quarantined.until.isoformat()}")
    if result.history is not None and result.verdict != "passed":
        lines.append(f"testsession.passRate={result.history.passRate:g}")
        lines.append(f"testsession.recentRuns={result.history.runs}")
    # A browser check's screenshot and trace: GitLab links a failed test's `[[ATTACHMENT|path]]`.
    lines += [f"[[ATTACHMENT|{a.path}]]" for a in result.attachments]
    # A Playwright check suite's tests, each with its outcome and its runs (Playwright's retries).
    lines += [
        f"testsession.test={t.status} ({t.runs} run{'s' if t.runs != 1 else ''}): {t.name}"
        for t in result.tests
    ]
    return lines


class _Renderer:
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.gate = Gate.of(outcome)
        # The digest's items by result: their known/new history is decided there, once.
        self.items: dict[int, Item] = {id(item.result): item for item in digest(outcome).failures}
        self.limit = _text_limit(outcome)
        self.used_names: dict[str, set[str]] = {}
        self.analysis_cache: dict[str, str] = {}
        self.locations: dict[str | None, str] = {}
        self.classname_xml = ""  # the current suite's classname, escaped once

    # -- texts --------------------------------------------------------------------------------

    def group_texts(self, result: ResultOutcome, groups: dict[str, ErrorGroupOutcome]) -> list[str]:
        texts = []
        for group_id in result.errorGroupIds[:MAX_GROUPS_PER_RESULT]:
            group = groups.get(group_id)
            if group is None:
                texts.append(f"Error group {clean(group_id, MAX_NAME)}: not fetched")
                continue
            text = self.analysis_cache.get(group.id)
            if text is None:
                text = self.analysis_cache[group.id] = _analysis_text(group, self.limit)
            texts.append(text)
        return texts

    def body(
        self,
        result: ResultOutcome,
        groups: dict[str, ErrorGroupOutcome],
        lead: str,
        always_lead: bool = False,
        note: str = "",
    ) -> str:
        """Error first (readers show the start: GitLab's merge request widget the first lines), then
        the known/new `note`, the analyses, and the result's link."""
        error = clean(result.error, self.limit)
        parts = [lead, error] if always_lead and error else [error or lead]
        if note:
            parts.append(note)
        parts.extend(self.group_texts(result, groups))
        if result.link:
            parts.append(f"Result: {clean(result.link, MAX_NAME)}")
        return cap("\n\n".join(parts), self.limit)

    def classification(self, result: ResultOutcome, groups: dict[str, ErrorGroupOutcome]) -> str | None:
        for group_id in result.errorGroupIds:
            group = groups.get(group_id)
            if group and group.analysis and group.analysis.analysis:
                return _type(group.analysis.analysis.classification, "") or None
        return None

    # -- elements -----------------------------------------------------------------------------

    def unique_name(self, classname: str, name: str, raw_id: str) -> str:
        # Names by classname, as strings: the garbage collector does not follow strings, and
        # 100,000 tuples living until the report is written would make it walk the whole run.
        used = self.used_names.setdefault(classname, set())
        if name not in used:
            used.add(name)
            return name
        result_id = _attr(raw_id, 100)
        for candidate in (f"{name} #{result_id[:8]}", f"{name} #{result_id}"):
            if candidate not in used:
                used.add(candidate)
                return candidate
        n = 2
        while f"{name} #{result_id} ({n})" in used:
            n += 1
        unique = f"{name} #{result_id} ({n})"
        used.add(unique)
        return unique

    def testcase(
        self,
        lines: list[str],
        session: SessionOutcome,
        classname: str,
        result: ResultOutcome,
        groups: dict[str, ErrorGroupOutcome],
    ) -> JunitKind:
        """Writes the result's testcase; returns what it counts as, which the verdict policy decides:
        a result that fails the gate is a failure or an error, never a skip."""
        location = result.runLocation or session.runLocation
        check = result.name or result.checkId or result.id
        name = self.unique_name(classname, self.named(check, location), result.id)
        kind = junit_kind(result, self.gate)
        # Written here rather than by _element: one testcase per result, the report's hot path.
        head = (
            f'{INDENT * 2}<testcase name="{_xml_attr(name)}" classname="{self.classname_xml}" '
            f'time="{format_seconds(result.durationSeconds)}"'
        )
        out = history_lines(result)  # the system-out lines
        if kind == "passed" and result.verdict == "passed" and not out:
            lines.append(head + " />")
            return kind
        children: list[str] = []
        if kind != "passed" or result.verdict in ("degraded", "flaky"):
            lead, message = self.wording(result, session)
            item = self.items.get(id(result))
            note = item.history.sentence if item is not None and item.history is not None else ""
            if kind in ("failure", "error"):
                # `type` is a fixed word: GitLab's parser reads it as a type conversion, so no
                # service text goes there (the classification is in the body).
                always_lead = result.verdict in ("running", "degraded")
                # A failed check's type is its analysis' classification where it is a plain word.
                word = self.classification(result, groups) if result.verdict == "failed" else None
                text = self.body(result, groups, lead, always_lead, note)
                failure = {"message": message, "type": word or TYPES[result.verdict]}
                children.append(_element(3, kind, failure, text))
            elif kind == "skipped" and item is not None and item.excused_by_quarantine:
                # A quarantined check's failure: skipped, so that every reader's count agrees with the
                # gate, with the failure's message and who answers for it.
                held = result.quarantined
                assert held is not None
                why = f": {held.reason}" if held.reason else ""
                # The file's text (owner, reason) through the sanitiser: the note is written as it is.
                said = one_line(f"quarantined until {held.until.isoformat()}, owner {held.owner}{why}", 600)
                message = one_line(f"{message} ({said})", MAX_NAME)
                excused = f"{note.rstrip('.')}. It did not fail the gate: {said}.".lstrip(". ")
                text = self.body(result, groups, lead, note=excused)
                children.append(_element(3, "skipped", {"message": message}, text))
            elif kind == "skipped":
                # GitLab drops `message`: the text says it too, after the error.
                forgiven = f"{note.rstrip('.')}; it did not fail the gate ({FORGIVEN})."
                message = one_line(f"{message} (known failure: failOn: new forgives it)")
                text = self.body(result, groups, lead, note=forgiven)
                children.append(_element(3, "skipped", {"message": message}, text))
            elif result.verdict == "flaky":
                out.insert(0, self.flaky(children, result))
            elif result.verdict == "degraded":
                out[:0] = [lead] + ([f"Result: {clean(result.link, MAX_NAME)}"] if result.link else [])
        if out:
            children.append(_element(3, "system-out", {}, "\n".join(out)))
        if children:
            lines += [head + ">", *children, f"{INDENT * 2}</testcase>"]
        else:
            lines.append(head + " />")
        return kind

    def named(self, check: str, location: str | None) -> str:
        """`_named`, the location's part sanitised once per location (one per session, mostly)."""
        suffix = self.locations.get(location)
        if suffix is None:
            suffix = self.locations[location] = f" [{_attr(location, 200)}]"
        return _named(check, suffix)

    def wording(self, result: ResultOutcome, session: SessionOutcome) -> tuple[str, str]:
        """The lead sentence of a result's body, and its one-line message."""
        status = _attr(result.status, 100)
        error = one_line(result.error)
        if result.verdict == "running":
            why = one_line(session.problem or self.outcome.message)
            lead = "The run ended before this check finished" + (f": {why}" if why else ".")
            return lead, f"did not finish (status {status})" + (f": {why}" if why else "")
        if result.verdict == "cancelled":
            lead = "The session was cancelled before this check finished (not by this run)."
            return lead, f"cancelled (status {status})"
        if result.verdict == "degraded":
            note = "degraded: " + (error or "the check passed with degraded performance")
            return note, note
        if result.verdict == "error":
            return f"The check could not run to a verdict (status {status}).", error or (
                f"check errored (status {status})"
            )
        return f"The check failed (status {status}) without an error message.", error or (
            f"check failed (status {status})"
        )

    def flaky(self, children: list[str], result: ResultOutcome) -> str:
        """surefire's rerun format: one flakyFailure per failed attempt, the test itself passed.
        Returns the line for the testcase's system-out."""
        attempts = result.failedAttempts
        for attempt in attempts:
            attributes = {
                "message": one_line(attempt.error) or f"attempt failed (status {_attr(attempt.status)})",
                "type": _type(attempt.status, "FAILED"),
            }
            text = clean(attempt.error, self.limit) or f"The attempt failed (status {attempt.status})."
            if attempt.link:
                text += f"\n\nAttempt: {clean(attempt.link, MAX_NAME)}"
            trace = [_element(4, "stackTrace", {}, cap(text, self.limit))]
            children += _parent(3, "flakyFailure", attributes, trace)
        failed = len(attempts) or max(1, result.attempts - 1)
        if not attempts:
            message = f"{counted(failed, 'earlier attempt')} failed"
            children.append(_element(3, "flakyFailure", {"message": message, "type": "FAILED"}))
        passed_on = max(result.attempts, failed + 1)
        note = f"flaky: passed on attempt {passed_on} after {counted(failed, 'failed attempt')}"
        if result.link:
            note += f"\nResult: {clean(result.link, MAX_NAME)}"
        return note

    def session_problem(self, lines: list[str], session: SessionOutcome, classname: str) -> bool:
        """A session that could not run to the end shows as one error testcase, so that test
        reporters do not show a green, empty suite for a red job."""
        if not session.problem or session.exitCode in (0, 1):
            return False
        name = self.unique_name(classname, self.named("(session)", session.runLocation), "session")
        text = clean(session.problem, self.limit)
        if session.link:
            text += f"\n\nSession: {clean(session.link, MAX_NAME)}"
        error = _element(3, "error", {"message": one_line(session.problem), "type": "SESSION"}, text)
        # Time 0: the session's time is on the testsuite; readers that add up testcase times
        # (GitLab, dorny) would count it twice here.
        lines += _parent(2, "testcase", {"name": name, "classname": classname, "time": "0.000"}, [error])
        return True

    def suite(self, lines: list[str], session: SessionOutcome) -> tuple[int, int, int, int, float]:
        location = session.runLocation
        classname = _attr(session.name) or _attr(f"testsession.{location}")
        self.classname_xml = _xml_attr(classname)
        commit = self.outcome.commit
        properties = []
        for key, value in (
            ("testSessionId", session.testSessionId),
            ("link", session.link),
            ("runLocation", session.runLocation),
            ("environment", session.environment or commit.environment),
            ("commitId", commit.commitId),
            ("branchName", commit.branchName),
        ):
            value = _attr(value)
            if value:
                properties.append(_element(3, "property", {"name": key, "value": value}))
        children = _parent(2, "properties", {}, properties) if properties else []

        groups = {group.id: group for group in session.errorGroups}
        counts: dict[JunitKind, int] = {"passed": 0, "failure": 0, "error": 0, "skipped": 0}
        for result in session.results:
            counts[self.testcase(children, session, classname, result, groups)] += 1
        # A session that could not run to the end, with no result that says so: one error testcase.
        if not counts["error"] + counts["failure"] and self.session_problem(children, session, classname):
            counts["error"] += 1
        if session.problem:
            children.append(_element(2, "system-err", {}, clean(session.problem, self.limit)))

        tests = sum(counts.values())
        duration = session.durationSeconds
        if duration is None:
            duration = sum(r.durationSeconds or 0.0 for r in session.results)
        attributes = {
            "name": _attr(f"{'DEMO ' if self.outcome.world == 'demo' else ''}{session.name} [{location}]"),
            "tests": str(tests),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": format_seconds(duration),
        }
        if session.startedAt:
            attributes["timestamp"] = session.startedAt.isoformat(timespec="seconds")
        if session.testSessionId:
            attributes["id"] = _attr(session.testSessionId)
        if session.link:
            attributes["url"] = _attr(session.link)
        lines += _parent(1, "testsuite", attributes, children)
        return tests, counts["failure"], counts["error"], counts["skipped"], duration

    def render(self) -> str:
        outcome = self.outcome
        suites: list[str] = []
        tests = failures = errors = 0
        total_time = 0.0
        for session in outcome.sessions:
            t, f, e, _skipped, d = self.suite(suites, session)
            tests, failures, errors = tests + t, failures + f, errors + e
            total_time += d if math.isfinite(d) and d > 0 else 0.0
        if outcome.startedAt and outcome.finishedAt:
            # One naive and one aware timestamp cannot be subtracted: keep the sum of the suites.
            with contextlib.suppress(TypeError):
                total_time = max(0.0, (outcome.finishedAt - outcome.startedAt).total_seconds())
        # junit-10.xsd allows no `skipped` on <testsuites>; the suites carry it.
        attributes = {
            "name": "testsession DEMO (scripted results, not your build)"
            if outcome.world == "demo"
            else "testsession",
            "tests": str(tests),
            "failures": str(failures),
            "errors": str(errors),
            "time": format_seconds(total_time),
        }
        return XML_DECLARATION + "\n".join(_parent(0, "testsuites", attributes, suites)) + "\n"


def render_junit(outcome: Outcome) -> str:
    """The outcome as JUnit XML text (UTF-8 when written), valid against junit-10.xsd."""
    return _Renderer(outcome).render()
