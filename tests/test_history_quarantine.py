"""What the state file knows across runs (issue 43): each check's history, shown by `testsession history`
and every report, and a quarantine with an owner and an end date, decided by the one verdict policy.

Real runs: `testsession run --checks FILE --state F` against a local HTTP server, in this process
(helpers.run_here), the day set through the one clock seam (runner/core/clock.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer, start_http
from helpers import EXAMPLES, Ran, child_env, run_here, valid_junit

from runner.core import clock

STATUS_200 = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]
DAY = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
# Ids as production's (a sharded run's split names checks by id, and the service's ids are UUIDs).
IDS = {"Payments API": "0b9a3c4d-1111-4a5b-8c6d-000000000001", "Home": "0b9a3c4d-1111-4a5b-8c6d-000000000002"}
QUARANTINE = {
    "check": "Payments API",
    "owner": "@payments-team",
    "reason": "sandbox flaps, TICKET-42",
    "until": "2026-12-15",
}


@pytest.fixture
def server() -> Iterator[HttpServer]:
    http = start_http()
    try:
        yield http
    finally:
        http.stop()


@pytest.fixture
def day(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sets the run's moment: `day(datetime)`; the clock seam every decision by the day reads."""
    now = [DAY]
    monkeypatch.setattr(clock, "now", lambda: now[0])

    def set_day(moment: datetime) -> None:
        now[0] = moment

    return set_day


def write_checks(
    path: Path, server: HttpServer, payments: int, quarantine: list[dict[str, Any]] | None = None
) -> None:
    def check(name: str, status: int) -> dict[str, Any]:
        url = server.url(f"/status/{status}")
        request = {"method": "GET", "url": url, "assertions": STATUS_200}
        return {"id": IDS[name], "name": name, "checkType": "API", "request": request}

    data: dict[str, Any] = {"checks": [check("Payments API", payments), check("Home", 200)]}
    if quarantine is not None:
        data["quarantine"] = quarantine
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def run(tmp_path: Path, name: str, *more: str) -> tuple[Ran, dict[str, Any], Path]:
    out = tmp_path / name
    out.mkdir()
    argv = [
        "run", "--checks", str(tmp_path / "checks.yml"), "--state", str(tmp_path / "state.db"),
        "--json", str(out / "results.json"), "--junit", str(out / "junit.xml"),
        "--markdown", str(out / "summary.md"), "--no-rca", *more,
    ]  # fmt: skip
    ran = run_here(argv, child_env(), tmp_path)
    results = out / "results.json"
    data = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    return ran, data, out


def result(data: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [r for s in data["sessions"] for r in s["results"] if r["name"] == name]
    return found


def check_line(out: str, name: str) -> str:
    """The check's line in the list of results (`  FAILED         Payments API (API, local) ...`)."""
    [line] = [line for line in out.splitlines() if line.strip().startswith(f"FAILED         {name} (")]
    return line


def junit_case(out: Path, name: str) -> Any:
    root = valid_junit((out / "junit.xml").read_text(encoding="utf-8"))
    [case] = [c for c in root.iter("testcase") if c.get("name", "").startswith(name)]
    return case


def test_four_runs_of_one_state_file_give_the_flaky_check_a_pass_rate_of_three_in_four(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    checks = tmp_path / "checks.yml"
    codes = []
    for n, status in enumerate((200, 200, 500, 200)):
        day(DAY + timedelta(days=n))
        write_checks(checks, server, status)
        ran, data, out = run(tmp_path, f"run{n}")
        codes.append(ran.returncode)
        if n == 2:  # the failing run: its line says how often the check failed lately
            assert "history: failed 1 of the last 3 runs; flaky" in ran.stdout, ran.stdout
            assert check_line(ran.stdout, "Payments API").endswith(
                "— STATUS_CODE EQUALS 200: received 500 [new] · failed 1 of the last 3 runs; flaky"
            )
            payments = result(data, "Payments API")
            assert payments["history"]["failed"] == 1
            assert payments["history"]["recent"] == "..X"
            assert "failed 1 of the last 3 runs; flaky `..X`" in (out / "summary.md").read_text()
    assert codes == [0, 0, 1, 0]

    # The last run's reports: the check passes now, but not always lately.
    payments = result(data, "Payments API")
    assert payments["history"]["runs"] == 4
    assert payments["history"]["passRate"] == 0.75
    assert payments["history"]["streak"] == {"state": "passing", "runs": 1}
    assert result(data, "Home")["history"]["passRate"] == 1.0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "**Unstable lately (1)** — passing now:" in summary
    assert "- Payments API \\[local\\]: passed 3 of the last 4 runs `..X.`" in summary
    assert "unstable lately: Payments API (passed 3 of the last 4 runs)" in ran.stdout

    shown = run_here(["history", "--state", str(tmp_path / "state.db"), "--json"], child_env(), tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {row["name"]: row for row in json.loads(shown.stdout)["checks"]}
    assert rows["Payments API"]["passRate"] == 0.75
    assert rows["Payments API"]["checkId"] == IDS["Payments API"]
    assert (rows["Payments API"]["runs"], rows["Payments API"]["passed"], rows["Payments API"]["failed"]) == (
        4,
        3,
        1,
    )
    last = rows["Payments API"]["lastFailure"]
    assert last["at"].startswith("2026-12-03T09:00:00")
    assert last["error"] == "STATUS_CODE EQUALS 200: received 500"
    assert last["novelty"] == "new"
    assert rows["Home"]["passRate"] == 1.0 and rows["Home"]["lastFailure"] is None
    assert isinstance(rows["Home"]["medianMs"], int) and rows["Home"]["p95Ms"] >= rows["Home"]["medianMs"]

    # The table and its filters: the least stable first; --last narrows the window.
    table = run_here(["history", "--state", str(tmp_path / "state.db")], child_env(), tmp_path)
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["CHECK", "RUNS", "PASS"]
    assert lines[1].startswith("Payments API") and " 75% " in lines[1] and "..X." in lines[1]
    narrow = run_here(
        [
            "history",
            "--state",
            str(tmp_path / "state.db"),
            "--json",
            "--last",
            "1",
            "--check",
            IDS["Payments API"],
        ],
        child_env(),
        tmp_path,
    )
    [only] = json.loads(narrow.stdout)["checks"]
    assert (only["name"], only["runs"], only["passRate"]) == ("Payments API", 1, 1.0)
    typo = run_here(
        ["history", "--state", str(tmp_path / "state.db"), "--check", "Paymens API"], child_env(), tmp_path
    )
    assert typo.returncode == 2
    assert "did you mean 'Payments API'?" in typo.stderr


def test_a_failing_quarantined_check_passes_the_gate_until_its_day_then_gates_again(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    write_checks(tmp_path / "checks.yml", server, 500, [QUARANTINE])
    ran, data, out = run(tmp_path, "held")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (
        "QUARANTINED: Payments API (local) failed, not gating: owner @payments-team, until 2026-12-15: "
        "sandbox flaps, TICKET-42; its first recorded run"
    ) in ran.stdout
    assert "verdict: PASSED — gate passed: 1 quarantined check failed" in ran.stdout
    # The session's line agrees with the verdict: it failed, and says why the gate passes it.
    assert "finished: FAILED (1 quarantined check; the gate passes it) after" in ran.stdout
    assert check_line(ran.stdout, "Payments API").endswith(
        "received 500 [new] · quarantined, not gating (owner @payments-team)"
    )
    payments = result(data, "Payments API")
    assert payments["verdict"] == "failed"
    assert payments["quarantined"] == {
        "owner": "@payments-team",
        "reason": "sandbox flaps, TICKET-42",
        "until": "2026-12-15",
    }
    assert data["exitCode"] == 0 and data["verdict"] == "passed"
    case = junit_case(out, "Payments API")
    assert case.find("failure") is None and case.find("error") is None
    skipped = case.find("skipped")
    assert skipped is not None
    assert skipped.get("message") == (
        "STATUS_CODE EQUALS 200: received 500 (quarantined until 2026-12-15, owner @payments-team: "
        "sandbox flaps, TICKET-42)"
    )
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "**Quarantined (1)** — failed, but did not fail the gate:" in summary
    assert "owner @payments-team" in summary

    # The last day it holds: still held.
    day(datetime(2026, 12, 15, 23, 59, tzinfo=timezone.utc))
    assert run(tmp_path, "last-day")[0].returncode == 0

    # A day past `until`: the check gates again, and the run says whose quarantine expired.
    day(datetime(2026, 12, 16, 8, 0, tzinfo=timezone.utc))
    ran, data, out = run(tmp_path, "expired")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (
        "quarantine of Payments API (owner @payments-team, until 2026-12-15) has expired: the check gates "
        "again"
    ) in ran.stdout
    assert result(data, "Payments API").get("quarantined") is None
    assert data["expiredQuarantine"][0]["owner"] == "@payments-team"
    assert junit_case(out, "Payments API").find("failure") is not None
    assert "**Quarantine expired (1)** — these checks gate again:" in (out / "summary.md").read_text()


def test_a_quarantined_check_that_passes_gates_nothing_and_an_error_of_another_check_still_fails(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    entry = {**QUARANTINE, "check": IDS["Home"]}  # by id: Home passes, Payments API fails and is not held
    write_checks(tmp_path / "checks.yml", server, 500, [entry])
    ran, data, out = run(tmp_path, "other")
    assert ran.returncode == 1
    assert result(data, "Home")["quarantined"]["owner"] == "@payments-team"
    assert "QUARANTINED" not in ran.stdout  # nothing quarantined failed
    assert "finished: FAILED after" in ran.stdout  # a gating failure: nothing to explain
    assert junit_case(out, "Home").find("skipped") is None


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            {**QUARANTINE, "check": "Paymens API"},
            "quarantine[0].check: 'Paymens API' names no check of this run (give a check's name or id); "
            "did you mean 'Payments API'?",
        ),
        (
            {**QUARANTINE, "until": "2027-03-02"},
            "quarantine[0].until: 2027-03-02 is more than 90 days ahead "
            "(the latest allowed today is 2027-03-01)",
        ),
        ({**QUARANTINE, "team": "x"}, "quarantine[0].team"),
        (
            [QUARANTINE, {**QUARANTINE, "owner": "@other"}],
            "quarantine[1].check: 'Payments API' is quarantined already",
        ),
        ({k: v for k, v in QUARANTINE.items() if k != "owner"}, "quarantine[0].owner"),
        ({**QUARANTINE, "until": 20261215}, "quarantine[0].until: expected a day as YYYY-MM-DD"),
    ],
)
def test_a_quarantine_entry_that_cannot_hold_is_refused_before_anything_runs(
    tmp_path: Path, server: HttpServer, day: Any, entry: dict[str, Any] | list[dict[str, Any]], said: str
) -> None:
    write_checks(tmp_path / "checks.yml", server, 500, entry if isinstance(entry, list) else [entry])
    ran, data, _out = run(tmp_path, "refused")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert said in ran.stderr
    assert "Traceback" not in ran.stderr
    assert data["exitCode"] == 2  # the reports asked for say so, and nothing ran
    assert not [r for s in data["sessions"] for r in s["results"]]


def test_an_until_in_the_past_is_no_error_and_a_shard_records_nothing(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    write_checks(tmp_path / "checks.yml", server, 200, [{**QUARANTINE, "until": "2020-01-01"}])
    ran, data, _out = run(tmp_path, "past")
    assert ran.returncode == 0, ran.stderr
    assert "has expired" in ran.stdout
    ran, data, _out = run(tmp_path, "shard", "--shard", "1/1")
    assert ran.returncode == 0
    assert result(data, "Home").get("history") is None
    shown = run_here(["history", "--state", str(tmp_path / "state.db"), "--json"], child_env(), tmp_path)
    assert {row["runs"] for row in json.loads(shown.stdout)["checks"]} == {1}  # the first run only


def test_merge_keeps_the_quarantine_and_records_the_merged_run_once(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    write_checks(tmp_path / "checks.yml", server, 500, [QUARANTINE])
    ran, _data, out = run(tmp_path, "part", "--shard", "1/1")
    assert ran.returncode == 0
    state = tmp_path / "merged.db"
    merged = run_here(
        ["merge", str(out / "results.json"), "-o", str(tmp_path / "merged"), "--state", str(state)],
        child_env(),
        tmp_path,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "QUARANTINED: Payments API" in merged.stdout
    data = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert result(data, "Payments API")["quarantined"]["owner"] == "@payments-team"
    assert result(data, "Payments API")["history"]["runs"] == 1
    assert junit_case(tmp_path / "merged", "Payments API").find("skipped") is not None


def test_an_older_state_file_is_migrated_and_a_check_keeps_its_newest_200_runs(tmp_path: Path) -> None:
    from runner.state.store import MIGRATIONS, CheckRun, StateFile, read_check_runs

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        old.execute(statement)
    old.execute("PRAGMA application_id = 1414743379")
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    assert read_check_runs(path) == {}  # read as it is: no history yet

    state = StateFile.open(path)
    try:
        state.record_runs([CheckRun("a", "a", "A", "local", float(at), "passed", 5, 1) for at in range(205)])
        kept = state.check_runs(["a"])["a"]
    finally:
        state.close()
    assert len(kept) == 200
    assert (kept[0].at, kept[-1].at) == (5.0, 204.0)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 2


def test_a_spec_quarantines_checks_of_the_service_and_an_emulator_run_records_its_history(
    tmp_path: Path, day: Any
) -> None:
    """A run of the service (here the emulator, world and spec of examples/) reads its quarantine from
    the spec; it learns its checks from the results, so an entry that matched none is a warning."""
    world = yaml.safe_load((EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8"))
    world["settings"]["speed"] = 40
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    spec = yaml.safe_load((EXAMPLES / "testsession.yml").read_text(encoding="utf-8"))
    spec["quarantine"] = [
        {"check": "Checkout flow", "owner": "@shop", "until": "2026-12-31"},
        {"check": "Profile page script", "owner": "@profile", "until": "2026-12-31"},
        {"check": "Gone check", "owner": "@nobody", "until": "2026-12-31"},
    ]
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    argv = [
        "run", str(tmp_path / "spec.yml"), "--emulator", "--world", str(tmp_path / "world.yml"), "--no-rca",
        "--state", str(tmp_path / "state.db"), "--json", "results.json", "--junit", "", "--markdown", "",
    ]  # fmt: skip
    for n in range(2):
        day(DAY + timedelta(days=n))
        ran = run_here(argv, child_env(), tmp_path)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "QUARANTINED: Checkout flow (eu-west-1) failed, not gating: owner @shop" in ran.stdout
    assert "QUARANTINED: Profile page script (eu-west-1) error, not gating: owner @profile" in ran.stdout
    assert "warning: quarantine entry 'Gone check' matched no check of this run" in ran.stdout
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    checkout = result(data, "Checkout flow")
    assert checkout["quarantined"]["owner"] == "@shop"
    assert (checkout["history"]["runs"], checkout["history"]["failed"]) == (2, 2)


@pytest.mark.parametrize("passes", [9, 10])
def test_a_quarantined_check_that_passed_its_last_ten_runs_is_named_ready_to_leave(passes: int) -> None:
    import io
    from datetime import date

    from outcome_factory import outcome, session
    from outcome_factory import result as made_result

    from runner.ci.console import Console
    from runner.job.digest import digest
    from runner.job.history import summarize
    from runner.job.outcome import QuarantineOutcome
    from runner.job.policy import Gate
    from runner.job.run import judge
    from runner.reports import render_markdown
    from runner.state.store import CheckRun

    runs = [CheckRun("c", "c", "Payments API", "local", float(n), "failed", 5, 1) for n in range(3)]
    runs += [
        CheckRun("c", "c", "Payments API", "local", float(10 + n), "passed", 5, 1) for n in range(passes)
    ]
    summary = summarize(runs, quarantined=True)
    assert summary.readyToLeaveQuarantine == (passes >= 10)
    assert not summarize(runs).readyToLeaveQuarantine  # only a quarantined check leaves quarantine
    held = QuarantineOutcome(owner="@payments-team", until=date(2026, 12, 15))
    one = made_result("passed", "Payments API", quarantined=held, history=summary)
    judged = judge(outcome([session([one])]), Gate())
    stream = io.StringIO()
    Console(stream=stream, environ={"NO_COLOR": "1"}).finish(digest(judged), {})
    said = "ready to leave quarantine: Payments API (owner @payments-team) passed its last 10 runs in a row"
    assert (said in stream.getvalue()) == (passes >= 10)
    assert ("**Ready to leave quarantine (1)**" in render_markdown(judged)) == (passes >= 10)


def test_wait_reads_the_quarantine_of_its_spec(
    cli_env: Any, tmp_path: Path, day: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --detach`, then `wait ID --spec SPEC` (another job): the spec's quarantine holds there too."""
    from runner.cli.main import main

    spec = yaml.safe_load((EXAMPLES / "testsession.yml").read_text(encoding="utf-8"))
    spec["quarantine"] = [
        {"check": "Checkout flow", "owner": "@shop", "until": "2026-12-31"},
        {"check": "Profile page script", "owner": "@profile", "until": "2026-12-31"},
    ]
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert main(["run", str(EXAMPLES / "testsession.yml"), "--detach"]) == 0
    session_id = capsys.readouterr().out.split()[0]
    off = ["--junit", "", "--markdown", "", "--json", "", "--no-rca", "--timeout", "60"]
    assert main(["wait", session_id, *off]) == 1  # without the spec, both fail the gate
    capsys.readouterr()
    assert main(["wait", session_id, "--spec", str(tmp_path / "spec.yml"), *off]) == 0
    assert "QUARANTINED: Checkout flow (eu-west-1) failed, not gating: owner @shop" in capsys.readouterr().out


def test_hostile_text_of_a_quarantine_reaches_each_output_only_through_its_sanitiser(
    tmp_path: Path, server: HttpServer, day: Any
) -> None:
    entry = {
        **QUARANTINE,
        "owner": "@team\x1b[31m<b>|",
        "reason": "line one\nline two | <script>x</script> ::error::pwned \u202e",
    }
    write_checks(tmp_path / "checks.yml", server, 500, [entry])
    ran, _data, out = run(tmp_path, "hostile")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "\x1b" not in ran.stdout and "\u202e" not in ran.stdout
    [line] = [x for x in ran.stdout.splitlines() if x.startswith("QUARANTINED:")]
    assert "line one line two" in line or "line one" in line
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "<script>" not in summary and "\x1b" not in summary and "\u202e" not in summary
    [row] = [x for x in summary.splitlines() if x.startswith("- Payments API")]
    assert "|" not in row.replace("\\|", "")  # no cell or table broken open
    junit_case(out, "Payments API")  # valid against junit-10.xsd
    shown = run_here(["history", "--state", str(tmp_path / "state.db")], child_env(), tmp_path)
    assert "\x1b" not in shown.stdout


def test_a_secret_never_reaches_the_state_files_history(tmp_path: Path, server: HttpServer, day: Any) -> None:
    """The file outlives the run and `history` prints it: a secret in a failure's message is masked
    there as in every report (the engine masks a checks file's secrets; the run's redactor, any other)."""
    secret = "s3cr3t-token-4242"
    check = {
        "id": IDS["Payments API"],
        "name": "Payments API",
        "checkType": "API",
        "request": {
            "method": "GET",
            "url": server.url("/status/500"),
            "assertions": [{"source": "TEXT_BODY", "comparison": "CONTAINS", "target": "{{TOKEN}}"}],
        },
    }
    (tmp_path / "checks.yml").write_text(yaml.safe_dump({"checks": [check]}), encoding="utf-8")
    argv = [
        "run", "--checks", str(tmp_path / "checks.yml"), "--state", str(tmp_path / "state.db"),
        "--secret-env", "TOKEN", "--json", "", "--junit", "", "--markdown", "", "--no-rca",
    ]  # fmt: skip
    ran = run_here(argv, child_env(TOKEN=secret), tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    shown = run_here(["history", "--state", str(tmp_path / "state.db"), "--json"], child_env(), tmp_path)
    [row] = json.loads(shown.stdout)["checks"]
    assert row["lastFailure"]["error"].startswith("TEXT_BODY CONTAINS")
    assert secret not in shown.stdout
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert not db.execute(
            "SELECT count(*) FROM check_runs WHERE error LIKE ?", (f"%{secret}%",)
        ).fetchone()[0]
