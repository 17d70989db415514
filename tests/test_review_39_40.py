"""A second, adversarial read of what issues 39 and 40 changed: each defect found, as a user or an
attacker meets it."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import start_http
from helpers import run_here

ROOT = Path(__file__).resolve().parent.parent


def _bare_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


def test_every_place_that_names_the_exit_code_of_a_build_that_did_not_start_says_6(tmp_path: Path) -> None:
    """A build that never answers is exit 6 (BUILD_NOT_STARTED) now; --help's --build-timeout, the
    Action's exit-code output and docs/spec.md's "Never answers" still said 4 (or left 6 out)."""
    raw = run_here(["run", "--help"], _bare_env(), tmp_path).stdout
    help_text = " ".join(raw.split())
    found = re.search(r"--build-timeout SECONDS (.*?) --build-reuse", help_text)
    assert found and "exit 6" in found.group(1) and "exit 4" not in found.group(1), help_text
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    exit_output = re.search(r"^  exit-code:\n    description: >-\n((?:      .*\n)+)", action, re.MULTILINE)
    assert exit_output and "6 the build did not start" in " ".join(exit_output.group(1).split()), exit_output
    spec = " ".join((ROOT / "docs" / "spec.md").read_text(encoding="utf-8").split())
    never = re.search(r"\*\*Never answers:\*\*(.*?)\*\*Stopping:\*\*", spec)
    assert never and "exit 6" in never.group(1) and "exit 4" not in never.group(1), never


def test_a_checks_files_field_name_reaches_the_log_as_one_clean_line(tmp_path: Path) -> None:
    """A field name is text from outside (a checks file of a pull request): written as a JSON or
    quoted YAML key it can hold a line break and escapes. `validate` and `run --checks` printed it as it
    was: a line of the CI log that began with `::warning::` (a GitHub workflow command) and raw ANSI
    escapes (a terminal's title, colours)."""
    key = "x\n::warning::injected\x1b]0;title\x07\x1b[31m"
    check = {"name": "A", "checkType": "API", "request": {"url": "http://127.0.0.1:9/"}, key: 1}
    (tmp_path / "checks.json").write_text(json.dumps([check]), encoding="utf-8")
    (tmp_path / "spec.yml").write_text(
        'sessions:\n  - name: s\n    runLocation: local\n    "y\\n::error::spec\\e[2J": 1\n', encoding="utf-8"
    )
    env = {**_bare_env(), "GITHUB_ACTIONS": "true"}
    for argv in (["validate", "checks.json"], ["run", "--checks", "checks.json"], ["validate", "spec.yml"]):
        ran = run_here(argv, env, tmp_path)
        assert ran.returncode == 2, ran.stdout + ran.stderr
        out = ran.stdout + ran.stderr
        assert "unknown field" in out, out
        assert not [line for line in out.splitlines() if line.startswith("::")], out
        assert "\x1b" not in out and "\x07" not in out, out


def _one_run(tmp_path: Path) -> dict[str, Any]:
    """A real results.json: one API check against a local server, passed."""
    server = start_http()
    try:
        checks = [{"name": "Home", "checkType": "API", "request": {"url": server.url("/json")}}]
        (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
        argv = ["run", "--checks", "checks.yml", "--no-rca", "--json", "run/results.json"]
        ran = run_here([*argv, "--junit", "", "--markdown", ""], _bare_env(), tmp_path)
    finally:
        server.stop()
    assert ran.returncode == 0, ran.stdout + ran.stderr
    data: dict[str, Any] = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    return data


def test_a_part_whose_exit_code_is_not_one_is_refused_with_its_reports(tmp_path: Path) -> None:
    """A results.json is text from outside (a CI artifact). A session's exitCode that is not an exit
    code of testsession (99, -1) made `merge` crash (internal error, exit 4, a traceback, no reports);
    a run's own exitCode of 99 was ignored and the merge passed (exit 0). Both are bad input: exit 2
    naming the part and the field, the reports written."""
    data = _one_run(tmp_path)
    forged = {
        "session": lambda d: d["sessions"][0].update(exitCode=99),
        "negative": lambda d: d["sessions"][0].update(exitCode=-1),
        "run": lambda d: d.update(exitCode=99),
    }
    for name, change in forged.items():
        part = copy.deepcopy(data)
        change(part)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(part), encoding="utf-8")
        out = tmp_path / f"merged-{name}"
        ran = run_here(["merge", path.name, "-o", out.name], _bare_env(), tmp_path)
        assert ran.returncode == 2 and "Traceback" not in ran.stderr, (name, ran.stderr)
        assert f"{name}.json: not a testsession results file" in ran.stderr and "exitCode" in ran.stderr
        report = json.loads((out / "results.json").read_text(encoding="utf-8"))
        assert report["exitCode"] == 2 and report["verdict"] == "usage-error", report


@pytest.mark.timeout(30)
def test_a_part_whose_header_names_a_billion_parts_is_refused_at_once(tmp_path: Path) -> None:
    """A part's `shard` header is text from outside: `total: 1000000000` made merge list every missing
    part (a billion numbers: minutes of CPU, gigabytes), `index: 0` or `5` of 2 was a part "given" that
    cannot be. `--shard` allows 1 to 1000 parts: a header outside that is not a part (exit 2, the
    reports written), said within seconds."""
    server = start_http()
    try:
        checks = [
            {"name": f"Home {n}", "checkType": "API", "request": {"url": server.url("/json")}} for n in (1, 2)
        ]
        (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
        argv = ["run", "--checks", "checks.yml", "--no-rca", "--shard", "1/2", "--json", "part/results.json"]
        ran = run_here([*argv, "--junit", "", "--markdown", ""], _bare_env(), tmp_path)
    finally:
        server.stop()
    assert ran.returncode == 0, ran.stdout + ran.stderr
    data = json.loads((tmp_path / "part" / "results.json").read_text(encoding="utf-8"))
    for name, header in {"huge": {"total": 10**9}, "zero": {"index": 0}, "beyond": {"index": 5}}.items():
        part = copy.deepcopy(data)
        part["shard"].update(header)
        (tmp_path / f"{name}.json").write_text(json.dumps(part), encoding="utf-8")
        ran = run_here(["merge", f"{name}.json", "-o", f"merged-{name}"], _bare_env(), tmp_path)
        assert ran.returncode == 2 and "Traceback" not in ran.stderr, (name, ran.stderr)
        assert f"{name}.json: not a testsession results file: shard" in ran.stderr, ran.stderr
        report = json.loads((tmp_path / f"merged-{name}" / "results.json").read_text(encoding="utf-8"))
        assert report["exitCode"] == 2, report


def test_a_planted_link_to_a_device_other_than_a_terminal_or_null_is_refused(tmp_path: Path) -> None:
    """A report path that is a link was written through when its target was any device, so that
    `--junit /dev/stdout` keeps working: a link planted by a checkout or a cache at
    testsession-reports/junit.xml pointing at a disk (`/dev/sda`) had the report written over the
    disk's first bytes by a run as root. Only a FIFO, a socket, a terminal or the null device is
    written through a link (test_hostile_files: /dev/stdout); any other device is refused."""
    from runner.core.errors import UsageError
    from runner.reports.files import check_writable

    (tmp_path / "zero").symlink_to("/dev/zero")  # a device that takes writes harmlessly
    (tmp_path / "checks.yml").write_text(
        yaml.safe_dump([{"name": "A", "checkType": "API", "request": {"url": "http://127.0.0.1:1/"}}]),
        encoding="utf-8",
    )
    ran = run_here(["run", "--checks", "checks.yml", "--no-rca", "--junit", "zero"], _bare_env(), tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "zero: is a symbolic link" in ran.stderr, ran.stderr
    disks = sorted(p for p in Path("/dev").glob("loop*") if p.is_block_device())
    if disks:  # only stat'ed: check_writable never writes to a device
        (tmp_path / "disk").symlink_to(disks[0])
        with pytest.raises(UsageError, match="disk: is a symbolic link"):
            check_writable({"junit": tmp_path / "disk"})
    null = tmp_path / "null"
    null.symlink_to(os.devnull)
    check_writable({"junit": null})  # still written to, as /dev/stdout is


def test_a_report_to_dev_stdout_redirected_to_a_file_says_so_not_remove_the_link(tmp_path: Path) -> None:
    """`--junit /dev/stdout > junit.xml`: /dev/stdout then leads to a regular file, and the run refuses
    it (writing it would rename a file over /dev/stdout: as root, for the whole machine). The message
    said "is a symbolic link ... (remove the link": advice that, taken as root, removes /dev/stdout.
    It names what happened and what to give instead; the file is untouched."""
    redirected = tmp_path / "redirected.txt"
    redirected.write_text("console so far\n", encoding="utf-8")
    (tmp_path / "checks.yml").write_text(
        yaml.safe_dump([{"name": "A", "checkType": "API", "request": {"url": "http://127.0.0.1:1/"}}]),
        encoding="utf-8",
    )
    fd = os.open(redirected, os.O_WRONLY | os.O_APPEND)
    try:
        (tmp_path / "stdout").symlink_to(f"/proc/self/fd/{fd}")  # as /dev/stdout is, to fd 1
        argv = ["run", "--checks", "checks.yml", "--no-rca", "--junit", "stdout"]
        ran = run_here(argv, _bare_env(), tmp_path)
    finally:
        os.close(fd)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "remove the link" not in ran.stderr, ran.stderr
    assert "stdout: the output of this process, redirected to a file" in ran.stderr, ran.stderr
    assert redirected.read_text(encoding="utf-8") == "console so far\n"


def test_validate_reads_a_checks_file_over_a_megabyte_as_run_does(tmp_path: Path) -> None:
    """`validate` told a checks file from a spec by reading it as a spec (1 MB, 20,000 nodes): a checks
    file over either bound, which `run --checks` reads (16 MiB), was then checked as a spec and refused
    ("larger than 1000000 bytes (the bound of a YAML file)"; 4,000 checks in 1.7 MB: 23 s, then that)."""
    check = {"name": "A", "checkType": "API", "request": {"url": "http://127.0.0.1:1/"}}
    big = {"checks": [{**check, "description": "x" * 1_100_000}], "variables": []}
    (tmp_path / "checks.json").write_text(json.dumps(big), encoding="utf-8")
    ran = run_here(["validate", "checks.json"], _bare_env(), tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "checks.json: ok (a checks file: 1 check, 1 run here)" in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["state.db", "state.db.lock"])
def test_a_fifo_planted_as_the_state_file_or_its_lock_is_exit_2_not_a_hang(tmp_path: Path, name: str) -> None:
    """The state file's folder is kept in a CI cache (docs/emulator.md), so a FIFO can be planted there
    as a link can: `state.db` a FIFO hung the run until the job's timeout (its header was read with a
    blocking open), `state.db.lock` a FIFO was an internal error (exit 4, "Illegal seek"). Exit 2 with
    one line naming it."""
    os.mkfifo(tmp_path / name)
    (tmp_path / "checks.yml").write_text(
        yaml.safe_dump([{"name": "A", "checkType": "API", "request": {"url": "http://127.0.0.1:1/"}}]),
        encoding="utf-8",
    )
    argv = ["run", "--checks", "checks.yml", "--no-rca", "--state", "state.db"]
    ran = run_here(argv, _bare_env(), tmp_path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert f"{name}" in ran.stderr and "not a regular file" in ran.stderr, ran.stderr


def test_the_shop_examples_comment_says_what_id_a_check_without_one_gets() -> None:
    """examples/shop-checks.yml said a check without `id:` gets one "made from the name: products-api";
    it gets a uuid (made from that slug), and `--check-id products-api` is a usage error."""
    from runner.checks.checksfile import load_checks_file, made_id

    path = ROOT / "examples" / "shop-checks.yml"
    checks = load_checks_file(path, {}).checks
    (products,) = [c for c in checks if c.name == "Products API"]
    assert products.id == made_id("products-api") != "products-api"
    text = path.read_text(encoding="utf-8")
    assert "made from the name: products-api" not in text
