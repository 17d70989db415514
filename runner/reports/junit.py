"""JUnit XML for CI test reporters (GitLab, Jenkins, dorny, mikepenz, EnricoMi).

Built with the standard library's ElementTree, as pytest's junitxml is, rather than the junit-xml
package: that one writes a `disabled` attribute junit-10.xsd rejects, raises on lone surrogates and
U+FFFE/U+FFFF (so one bad character costs the whole report), and is several times slower.

Layout: <testsuites> holds one <testsuite> per session (name "<session> [<location>]") with
<properties>, and one <testcase> per final check result, named "<check> [<location>]" so that the
same check in two locations stays two tests for readers that key on classname + name.
Only elements and attributes that junit-10.xsd allows are written.
"""

from __future__ import annotations

import contextlib
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from runner.core.text import sanitize
from runner.core.words import counted
from runner.job.digest import Item, digest
from runner.job.outcome import ErrorGroupOutcome, Outcome, ResultOutcome, SessionOutcome
from runner.job.policy import Gate, JunitKind, junit_kind
from runner.reports.text import (
    MAX_TEXT,
    analysis_state_line,
    cap,
    clean,
    format_seconds,
    one_line,
)

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'

# The bodies of all failures together should stay well under GitLab's 30 MB per report, so with
# many failing results each body gets a smaller share (never below MIN_TEXT).
TEXT_BUDGET = 20 * 1024 * 1024
MIN_TEXT = 2 * 1024
MAX_NAME = 1000  # names and attributes: readers show them on one line
MAX_GROUPS_PER_RESULT = 5


def _text_limit(outcome: Outcome) -> int:
    bodies = 1 + sum(1 for s in outcome.sessions for r in s.results if r.verdict != "passed")
    return max(MIN_TEXT, min(MAX_TEXT, TEXT_BUDGET // bodies))


def _attr(text: str | None, limit: int = MAX_NAME) -> str:
    # Attributes are single-line for every reader; ElementTree escapes what remains.
    return sanitize(text, limit=limit, lines="join")


def _named(name: str | None, location: str | None) -> str:
    """"<name> [<location>]", at most MAX_NAME long: a long name is cut, never the location, which
    keeps the same check in two locations two distinct tests."""
    suffix = f" [{_attr(location, 200)}]"
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
    state = group.analysis.state if group.analysis else None
    analysis = group.analysis.analysis if group.analysis else None
    if state != "completed" or analysis is None:
        reason = group.analysis.reason if group.analysis else None
        if state == "completed":
            reason = reason or "the analysis came back empty"
            state = "unavailable"
        lines.append(analysis_state_line(state, reason))
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
    return lines


def _add_out(case: ET.Element, lines: list[str]) -> None:
    """Appends lines to the testcase's system-out, making one when there is none."""
    if not lines:
        return
    out = case.find("system-out")
    if out is None:
        out = ET.SubElement(case, "system-out")
    out.text = "\n".join([out.text, *lines] if out.text else lines)


class _Renderer:
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.gate = Gate.of(outcome)
        # The digest's items by result: their known/new history is decided there, once.
        self.items: dict[int, Item] = {id(item.result): item for item in digest(outcome).failures}
        self.limit = _text_limit(outcome)
        self.used_names: set[tuple[str, str]] = set()
        self.analysis_cache: dict[str, str] = {}

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

    def unique_name(self, classname: str, name: str, result_id: str) -> str:
        candidates: Iterable[str] = (name, f"{name} #{result_id[:8]}", f"{name} #{result_id}")
        for candidate in candidates:
            if (classname, candidate) not in self.used_names:
                self.used_names.add((classname, candidate))
                return candidate
        n = 2
        while (classname, f"{name} #{result_id} ({n})") in self.used_names:
            n += 1
        unique = f"{name} #{result_id} ({n})"
        self.used_names.add((classname, unique))
        return unique

    def testcase(
        self,
        suite: ET.Element,
        session: SessionOutcome,
        classname: str,
        result: ResultOutcome,
        groups: dict[str, ErrorGroupOutcome],
    ) -> JunitKind:
        """Adds the result's testcase; returns what it counts as, which the verdict policy decides:
        a result that fails the gate is a failure or an error, never a skip."""
        location = result.runLocation or session.runLocation
        check = result.name or result.checkId or result.id
        name = self.unique_name(classname, _named(check, location), _attr(result.id, 100))
        case = ET.SubElement(
            suite,
            "testcase",
            {"name": name, "classname": classname, "time": format_seconds(result.durationSeconds)},
        )
        kind = junit_kind(result, self.gate)
        lead, message = self.wording(result, session)
        item = self.items.get(id(result))
        note = item.history.sentence if item is not None and item.history is not None else ""
        if kind in ("failure", "error"):
            # `type` is a fixed word: GitLab's parser reads it as a type conversion, so no
            # service text goes there (the classification is in the body).
            always_lead = result.verdict in ("running", "degraded")
            # A failed check's type is its analysis' classification where it is a plain word.
            word = self.classification(result, groups) if result.verdict == "failed" else None
            attributes = {"message": message, "type": word or TYPES[result.verdict]}
            ET.SubElement(case, kind, attributes).text = self.body(result, groups, lead, always_lead, note)
        elif kind == "skipped":
            # GitLab drops `message`: the text says it too, after the error.
            forgiven = f"{note.rstrip('.')}; it did not fail the gate (failOn: new forgives known failures)."
            ET.SubElement(
                case, "skipped", {"message": one_line(f"{message} (known failure: failOn: new forgives it)")}
            ).text = self.body(result, groups, lead, note=forgiven)
        elif result.verdict == "flaky":
            self.flaky(case, result)
        elif result.verdict == "degraded":
            out = [lead] + ([f"Result: {clean(result.link, MAX_NAME)}"] if result.link else [])
            ET.SubElement(case, "system-out").text = "\n".join(out)
        _add_out(case, history_lines(result))
        return kind

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

    def flaky(self, case: ET.Element, result: ResultOutcome) -> None:
        # surefire's rerun format: one flakyFailure per failed attempt, the test itself passed.
        attempts = result.failedAttempts
        for attempt in attempts:
            element = ET.SubElement(
                case,
                "flakyFailure",
                {
                    "message": one_line(attempt.error) or f"attempt failed (status {_attr(attempt.status)})",
                    "type": _type(attempt.status, "FAILED"),
                },
            )
            text = clean(attempt.error, self.limit) or f"The attempt failed (status {attempt.status})."
            if attempt.link:
                text += f"\n\nAttempt: {clean(attempt.link, MAX_NAME)}"
            ET.SubElement(element, "stackTrace").text = cap(text, self.limit)
        failed = len(attempts) or max(1, result.attempts - 1)
        if not attempts:
            ET.SubElement(
                case,
                "flakyFailure",
                {"message": f"{counted(failed, 'earlier attempt')} failed", "type": "FAILED"},
            )
        passed_on = max(result.attempts, failed + 1)
        note = f"flaky: passed on attempt {passed_on} after {counted(failed, 'failed attempt')}"
        if result.link:
            note += f"\nResult: {clean(result.link, MAX_NAME)}"
        ET.SubElement(case, "system-out").text = note

    def session_problem(self, suite: ET.Element, session: SessionOutcome, classname: str) -> bool:
        """A session that could not run to the end shows as one error testcase, so that test
        reporters do not show a green, empty suite for a red job."""
        if not session.problem or session.exitCode in (0, 1):
            return False
        name = self.unique_name(classname, _named("(session)", session.runLocation), "session")
        # Time 0: the session's time is on the testsuite; readers that add up testcase times
        # (GitLab, dorny) would count it twice here.
        case = ET.SubElement(suite, "testcase", {"name": name, "classname": classname, "time": "0.000"})
        text = clean(session.problem, self.limit)
        if session.link:
            text += f"\n\nSession: {clean(session.link, MAX_NAME)}"
        ET.SubElement(case, "error", {"message": one_line(session.problem), "type": "SESSION"}).text = text
        return True

    def suite(self, root: ET.Element, session: SessionOutcome) -> tuple[int, int, int, int, float]:
        location = session.runLocation
        classname = _attr(session.name) or _attr(f"testsession.{location}")
        suite = ET.SubElement(root, "testsuite", {"name": _attr(f"{session.name} [{location}]")})
        properties = ET.SubElement(suite, "properties")
        commit = self.outcome.commit
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
                ET.SubElement(properties, "property", {"name": key, "value": value})
        if not len(properties):
            suite.remove(properties)

        groups = {group.id: group for group in session.errorGroups}
        counts: dict[JunitKind, int] = {"passed": 0, "failure": 0, "error": 0, "skipped": 0}
        for result in session.results:
            counts[self.testcase(suite, session, classname, result, groups)] += 1
        # A session that could not run to the end, with no result that says so: one error testcase.
        if not counts["error"] + counts["failure"] and self.session_problem(suite, session, classname):
            counts["error"] += 1
        if session.problem:
            ET.SubElement(suite, "system-err").text = clean(session.problem, self.limit)

        tests = sum(counts.values())
        duration = session.durationSeconds
        if duration is None:
            duration = sum(r.durationSeconds or 0.0 for r in session.results)
        suite.set("tests", str(tests))
        suite.set("failures", str(counts["failure"]))
        suite.set("errors", str(counts["error"]))
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", format_seconds(duration))
        if session.startedAt:
            suite.set("timestamp", session.startedAt.isoformat(timespec="seconds"))
        if session.testSessionId:
            suite.set("id", _attr(session.testSessionId))
        if session.link:
            suite.set("url", _attr(session.link))
        return tests, counts["failure"], counts["error"], counts["skipped"], duration

    def render(self) -> str:
        outcome = self.outcome
        root = ET.Element("testsuites", {"name": "testsession"})
        tests = failures = errors = 0
        total_time = 0.0
        for session in outcome.sessions:
            t, f, e, _skipped, d = self.suite(root, session)
            tests, failures, errors = tests + t, failures + f, errors + e
            total_time += d if math.isfinite(d) and d > 0 else 0.0
        if outcome.startedAt and outcome.finishedAt:
            # One naive and one aware timestamp cannot be subtracted: keep the sum of the suites.
            with contextlib.suppress(TypeError):
                total_time = max(0.0, (outcome.finishedAt - outcome.startedAt).total_seconds())
        # junit-10.xsd allows no `skipped` on <testsuites>; the suites carry it.
        root.set("tests", str(tests))
        root.set("failures", str(failures))
        root.set("errors", str(errors))
        root.set("time", format_seconds(total_time))
        ET.indent(root, space="  ")
        return XML_DECLARATION + ET.tostring(root, encoding="unicode") + "\n"


def render_junit(outcome: Outcome) -> str:
    """The outcome as JUnit XML text (UTF-8 when written), valid against junit-10.xsd."""
    return _Renderer(outcome).render()
