"""A user's regex on the build's text is bounded (trial25's finding 1): a pattern that backtracks for
ever (`^(a|aa)+$` on a long run of a's) fails its assertion within the attempt's time, and the rest
of the process keeps running meanwhile (the `regex` module releases the GIL, where `re` froze the
whole run: its deadline, SIGTERM and Ctrl-C included)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer
from helpers import child_env

from runner.checks import Attempt, Limits, run_check
from runner.checks.assertions import evaluate
from runner.checks.regex_budget import RegexBudget
from runner.models.check_definitions import Assertion, parse_check_definition

REDOS = "^(a|aa)+$"


def api(url: str, assertions: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"name": "regex", "checkType": "API", "request": {"url": url, "assertions": assertions}, **fields}


def text_regex(pattern: str, comparison: str = "IS_EMPTY", target: str = "") -> dict[str, Any]:
    return {"source": "TEXT_BODY", "property": pattern, "comparison": comparison, "target": target}


def test_a_backtracking_regex_fails_within_the_attempts_bound_and_the_process_keeps_running(
    web: HttpServer,
) -> None:
    check = parse_check_definition(
        api(web.url("/big?fill=a&bytes=200000&tail=!"), [text_regex(REDOS)], maxResponseTime=1500)
    )
    done: list[Attempt] = []
    worker = threading.Thread(target=lambda: done.append(run_check(check, max_run_seconds=30).final))
    started = time.monotonic()
    worker.start()
    ticks = 0
    while worker.is_alive() and time.monotonic() - started < 20:
        time.sleep(0.01)  # this thread runs while the worker is in the regex
        ticks += 1
    elapsed = time.monotonic() - started
    worker.join(1)
    [attempt] = done
    # The attempt's 1.5 s, not the match's end (never): a bound far from both, for a loaded machine.
    assert elapsed < 10, elapsed
    assert ticks >= 30, ticks  # with `re`, this thread got no turn until the match ended (never)
    assert not attempt.passed and attempt.error_kind == "assertion"
    message = attempt.message or ""
    assert re.fullmatch(
        r"TEXT_BODY \^\(a\|aa\)\+\$ IS_EMPTY: regex took longer than 1(\.[0-9])? s \(the time this attempt "
        r"had left for its regular expressions\): .*",
        message,
    ), message
    # Its group's key keeps the assertion and drops the duration.
    assert attempt.fingerprint is not None and "took longer than <n> s" in attempt.fingerprint


def test_the_regex_budget_is_at_most_the_cap_and_at_least_the_floor(web: HttpServer) -> None:
    check = parse_check_definition(api(web.url("/big?fill=a&bytes=100000&tail=!"), [text_regex(REDOS)]))
    limits = Limits(regex_max_seconds=0.4)  # the API default bound is 20 s: the cap decides
    started = time.monotonic()
    attempt = run_check(check, max_run_seconds=30, limits=limits).final
    assert time.monotonic() - started < 10  # not the 20 s default nor the match's end (never)
    assert "regex took longer than 0.4 s" in (attempt.message or "")


@pytest.mark.parametrize(
    "path",
    [
        "$.items[?@.name =~ /(a|aa)+/].name",  # python-jsonpath compiles =~ with `re`
        '$.items[?match(@.name, "(a|aa)+")].name',  # RFC 9535's functions (`regex`, no timeout)
        '$.items[?search(@.name, "^(a|aa)+$")].name',
    ],
)
def test_regexes_in_jsonpath_filters_are_bounded_too(path: str) -> None:
    document = {"items": [{"name": "a" * 50_000 + "!"}, {"name": "ok"}]}
    assertion = Assertion(source="JSON_BODY", property=path, comparison="IS_EMPTY", target="")
    started = time.monotonic()
    result = evaluate(assertion, {"JSON_BODY": document}, budget=RegexBudget.start(0.3))
    assert time.monotonic() - started < 10  # unbounded, the match never ends
    assert not result.passed
    assert result.detail.startswith("regex took longer than 0.3 s in the JSONPath's filter"), result.detail


def json_path(path: str, target: str) -> dict[str, Any]:
    return {"source": "JSON_BODY", "property": path, "comparison": "EQUALS", "target": target}


def test_regexes_keep_productions_semantics() -> None:
    """First capture group, else the whole match; /re/flags; no match is nothing found."""
    values = {"TEXT_BODY": "The quick brown fox", "JSON_BODY": {"items": [{"n": "ab"}, {"n": "cd"}]}}
    cases = [
        (text_regex("quick (.*) fox", "EQUALS", "brown"), True),
        (text_regex("/QUICK (\\w+)/i", "EQUALS", "brown"), True),
        (text_regex("qu\\w+", "EQUALS", "quick"), True),
        (text_regex("slow (.*)", "IS_EMPTY"), True),
        (text_regex("(", "IS_EMPTY"), False),  # invalid: fails, saying so
        (json_path("$.items[?@.n =~ /a./].n", "ab"), True),
        (json_path('$.items[?match(@.n, "c.")].n', "cd"), True),
    ]
    for raw, expected in cases:
        result = evaluate(Assertion.model_validate(raw), values)
        assert result.passed is expected, (raw, result.describe())


def test_a_long_number_like_body_is_compared_at_once(web: HttpServer) -> None:
    """Our own number test on the build's text was quadratic (48 s on 40,000 digits and a letter)."""
    check = parse_check_definition(
        api(web.url("/big?fill=1&bytes=1000000&tail=x"), [text_regex("", "EQUALS", "5")])
    )
    started = time.monotonic()
    attempt = run_check(check, max_run_seconds=30).final
    assert time.monotonic() - started < 10  # quadratic, a million digits take hours
    assert not attempt.passed and attempt.error_kind == "assertion"


# --- the whole run: `testsession run --emulator` in a process of its own ------------------------------


def redos_world(web: HttpServer, key: str, max_response_ms: int) -> dict[str, Any]:
    url = web.url(f"/big?fill=a&bytes=1048576&tail=!&key={key}")
    return {
        "settings": {"analysisDelaySeconds": 0},
        "accounts": [{
            "id": "7d3e5c1a-2b4f-4a6e-9c8d-0e1f2a3b4c5d",
            "keys": [{"key": "tsk_regex_bound_0123456789"}],
            "checks": [{
                "id": "00000000-0000-4000-8000-000000000081", "name": "Body is only a's", "checkType": "API",
                "tags": ["redos"], "maxResponseTime": max_response_ms,
                "request": {"url": url, "assertions": [text_regex(REDOS)]},
            }],
        }],
    }  # fmt: skip


def start_run(tmp_path: Path, world: dict[str, Any]) -> subprocess.Popen[str]:
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "run", "--emulator", "--world", "world.yml", "--tag", "redos",
         "--location", "eu-west-1", "--timeout", "20", "--json", "out.json", "--junit", "junit.xml",
         "--markdown", ""],
        cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_the_trial_regex_ends_the_run_with_reports_and_exit_1(web: HttpServer, tmp_path: Path) -> None:
    proc = start_run(tmp_path, redos_world(web, uuid.uuid4().hex, 2000))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    [result] = [r for s in results["sessions"] for r in s["results"]]
    assert result["status"] == "FAILED"
    assert result["error"].startswith("TEXT_BODY ^(a|aa)+$ IS_EMPTY: regex took longer than"), result["error"]
    assert "regex took longer than" in (tmp_path / "junit.xml").read_text(encoding="utf-8")
    [group] = results["sessions"][0]["errorGroups"]
    assert group["analysis"]["model"] == "rules-v1/run-regex-timeout"
    assert "Rewrite the regular expression" in group["analysis"]["analysis"]["codeFix"]


def test_sigterm_during_a_slow_regex_ends_the_run_in_seconds(web: HttpServer, tmp_path: Path) -> None:
    key = uuid.uuid4().hex
    proc = start_run(tmp_path, redos_world(web, key, 20_000))  # the regex may take 5 s (the cap)
    counts: dict[str, int] = web.server.counts  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while not counts.get(key) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert counts.get(key), "the check's request never arrived"
    time.sleep(1.0)  # the 1 MiB body has arrived: the regex is running, with about 4 s left
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    took = time.monotonic() - signalled
    assert proc.returncode == 143, out + err
    assert took < 3.0, took  # before the regex's own 5 s were over: the signal was handled at once
    assert (tmp_path / "out.json").is_file() and (tmp_path / "junit.xml").is_file()
