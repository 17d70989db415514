"""The GitLab template's baseline recipe: the job fetches the last default-branch results.json with the
job artifacts API (here a stand-in GitLab on 127.0.0.1) and compares with it; without one it goes on."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_ci_gitlab import read_dotenv, run_job

ARTIFACT = "/api/v4/projects/42/jobs/artifacts/release%2Fmain/raw/testsession-reports/results.json"


class FakeGitLab:
    def __init__(self) -> None:
        self.artifact: bytes | None = None
        self.requests: list[tuple[str, str | None]] = []


@pytest.fixture
def gitlab_api() -> Iterator[tuple[str, FakeGitLab]]:
    state = FakeGitLab()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("PRIVATE-TOKEN")))
            ok = self.path == f"{ARTIFACT}?job=testsession" and self.headers.get("PRIVATE-TOKEN") == "glpat-x"
            body = state.artifact if ok and state.artifact is not None else b'{"message":"404 Not found"}'
            self.send_response(200 if ok and state.artifact is not None else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v4", state
    finally:
        server.shutdown()
        server.server_close()


def gitlab_vars(tmp_path: Path, url: str) -> dict[str, str]:
    python = tmp_path / "py"
    python.mkdir()
    (python / "python").symlink_to(sys.executable)
    return {
        "PATH": os.pathsep.join([str(tmp_path / "bin"), str(python), os.environ["PATH"]]),
        "CI_API_V4_URL": url,
        "CI_PROJECT_ID": "42",
        "CI_DEFAULT_BRANCH": "release/main",
        "TESTSESSION_GITLAB_TOKEN": "glpat-x",
        "TESTSESSION_ARGS": "--tag checkout --fail-on new",
    }


def test_the_job_compares_with_the_last_default_branch_results_and_goes_on_without_one(
    tmp_path: Path, emulator: object, gitlab_api: tuple[str, FakeGitLab]
) -> None:
    url, state = gitlab_api
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()

    # No baseline yet (404): one line, and the run goes on without a baseline.
    first = run_job(first_dir, emulator, gitlab_vars(first_dir, url))
    assert first.returncode == 0, first.stdout + first.stderr  # the known failure alone passes
    assert "testsession: no baseline from release/main: 404 Not Found" in first.stdout
    results = json.loads((first_dir / "testsession-reports" / "results.json").read_text())
    assert results["baseline"] is None
    assert "glpat-x" not in first.stdout + first.stderr

    # The artifact of that run is the baseline of the next one.
    state.artifact = (first_dir / "testsession-reports" / "results.json").read_bytes()
    second = run_job(second_dir, emulator, gitlab_vars(second_dir, url))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "testsession: baseline testsession-baseline/results.json from the last successful pipeline" in (
        second.stdout
    )
    results = json.loads((second_dir / "testsession-reports" / "results.json").read_text())
    assert results["baseline"]["used"] is True
    (checkout,) = results["sessions"][0]["results"]
    assert checkout["baseline"] == "still-failing" and checkout["known"] is True
    summary = (second_dir / "testsession-reports" / "summary.md").read_text()
    assert summary.startswith("## ✅ Passed — gate passed: 1 known failure, no new ones")
    assert "### Changes since the baseline (0 newly failing, 0 fixed, 0 slower)" in summary
    values = read_dotenv(second_dir / "testsession-reports" / "testsession.env")
    assert (values["TESTSESSION_NEW_FAILURES"], values["TESTSESSION_KNOWN_FAILURES"]) == ("0", "1")
    assert values["TESTSESSION_FIXED"] == "0" and values["TESTSESSION_STATUS"] == "passed"
    assert [path for path, _token in state.requests] == [f"{ARTIFACT}?job=testsession"] * 2
