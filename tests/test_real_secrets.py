"""No secret anywhere: a build that echoes every secret back (body, headers, Basic credentials) and a
full `testsession run` against the emulator; every output is searched for every spelling of every
secret (the session's, the account's and the check's), in any case: a secret in a host name comes
back lower-cased (trial25's finding 6)."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import yaml
from checks_servers import HttpServer, free_port
from conftest import CI_PREFIXES

from runner.cli.main import main
from runner.emulator import Emulator

SESSION_SECRET = "sess-Secret/9f8e+7d"  # URI-encoded differently than it is written
ACCOUNT_SECRET = "acct-secret-6c5b4a3"
CHECK_SECRET = "check-secret-2e1d0c9"
HOST_SECRET = "Sess-T0ken_4242"  # in a host name: the DNS error quotes it lower-cased
KEY = "tsk_secret_test_0123456789"
ACCOUNT = "acc-secrets"


def spellings(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), json.dumps(secret)[1:-1]]


def check(name: str, url: str, assertion: dict[str, str], **request: Any) -> dict[str, Any]:
    return {
        "id": name, "name": name, "checkType": "API", "tags": ["echo"],
        "request": {"method": "POST", "url": url, "assertions": [assertion], **request},
        "environmentVariables": [{"key": "CHECK_SECRET", "value": CHECK_SECRET, "secret": True}],
    }  # fmt: skip


def the_world(web: HttpServer) -> dict[str, Any]:
    everything = "s={{SESSION_SECRET}}&a={{ACCOUNT_SECRET}}&c={{CHECK_SECRET}}"
    headers = [
        {"key": "X-Session", "value": "{{SESSION_SECRET}}"},
        {"key": "X-Account", "value": "{{ACCOUNT_SECRET}}"},
        {"key": "X-Check", "value": "{{CHECK_SECRET}}"},
    ]
    echo = web.url(f"/echo?{everything}")
    return {
        "settings": {"analysisDelaySeconds": 0},
        "accounts": [
            {
                "id": ACCOUNT,
                "keys": [{"key": KEY}],
                "environmentVariables": [{"key": "ACCOUNT_SECRET", "value": ACCOUNT_SECRET, "secret": True}],
                "checks": [
                    # The echoed body is what the failed assertion quotes.
                    check(
                        "body echo",
                        echo,
                        {"source": "TEXT_BODY", "comparison": "CONTAINS", "target": "never-there"},
                        headers=headers,
                        body=everything,
                    ),
                    # The echoed header is the actual value; the body is quoted by the analysis.
                    check(
                        "header echo",
                        echo,
                        {
                            "source": "JSON_BODY",
                            "property": "$.headers['x-session']",
                            "comparison": "EQUALS",
                            "target": "wrong",
                        },
                        headers=headers,
                        basicAuth={"username": "ci", "password": "{{CHECK_SECRET}}"},
                    ),
                    # A secret in the host: the name comes back lower-cased in the error.
                    check(
                        "secret in host",
                        "http://{{HOST_SECRET}}.invalid/x",
                        {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"},
                    ),
                    # Secrets in the URL of a request that gets no answer.
                    check(
                        "refused",
                        f"http://127.0.0.1:{free_port()}/{{{{ACCOUNT_SECRET}}}}?{everything}",
                        {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"},
                    ),
                ],
            }
        ],
    }


def test_no_secret_in_any_output(
    web: HttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.db"
    with Emulator(world=the_world(web), state=str(state)) as emu:
        monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
        monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
        monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", ACCOUNT)
        monkeypatch.setenv("SESSION_SECRET", SESSION_SECRET)
        monkeypatch.setenv("HOST_SECRET", HOST_SECRET)
        for name in list(os.environ):  # a run must not publish into the CI job running the tests
            if name.startswith(CI_PREFIXES) or name == "CI":
                monkeypatch.delenv(name, raising=False)
        monkeypatch.chdir(tmp_path)
        spec = tmp_path / "spec.yml"
        spec.write_text(
            yaml.safe_dump(
                {
                    "name": "secrets",
                    "runLocation": "eu-west-1",
                    "target": {"matchTags": [["echo"]]},
                    "wait": {"timeoutSeconds": 60},
                    "rca": {"timeoutSeconds": 20},
                    "reports": {
                        "junit": "out/junit.xml",
                        "markdown": "out/summary.md",
                        "json": "out/results.json",
                    },
                }
            ),
            encoding="utf-8",
        )
        secrets = ["--secret-env", "SESSION_SECRET", "--secret-env", "HOST_SECRET"]
        code = main(["run", str(spec), *secrets, "--verbose"])
        console = capsys.readouterr()
        assert code == 1, console.err

        results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
        outcomes = {r["name"]: r for s in results["sessions"] for r in s["results"]}
        # The build did echo the secrets: they show masked where the build put them.
        assert outcomes["body echo"]["error"].startswith("TEXT_BODY CONTAINS never-there: received")
        assert "***" in outcomes["body echo"]["error"]
        assert (
            outcomes["header echo"]["error"] == "JSON_BODY $.headers['x-session'] EQUALS wrong: received ***"
        )
        assert outcomes["secret in host"]["error"] == "DNS lookup failed: ***.invalid"

        texts = {
            "console": console.out + console.err,
            **{p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()},
        }
        api = {"Authorization": f"Bearer {KEY}", "X-Service-Account": ACCOUNT}
        session_id = results["sessions"][0]["testSessionId"]
        session = requests.get(f"{emu.url}/v1/test-sessions/{session_id}", headers=api, timeout=5).json()
        texts["session (API)"] = json.dumps(session)
        texts["session page"] = requests.get(session["testSessionLink"], timeout=5).text
        for result in session["results"]:
            texts[f"page {result['name']}"] = requests.get(result["testSessionResultLink"], timeout=5).text
        analysed = 0
        for group_id in session["errorGroupIds"]:
            group = requests.get(f"{emu.url}/v1/test-session-error-groups/{group_id}", headers=api, timeout=5)
            texts[f"group {group_id}"] = group.text
            for summary in group.json()["rootCauseAnalyses"]:
                analysis = requests.get(
                    f"{emu.url}/v1/root-cause-analyses/{summary['id']}", headers=api, timeout=5
                )
                texts[f"analysis {summary['id']}"] = analysis.text
                analysed += "rootCause" in analysis.text
        assert analysed == 4  # the run analysed every failure, and we read each analysis
        assert "its body began" in "".join(texts.values())  # the echoed body was quoted (masked)

    with sqlite3.connect(state) as db:  # the state file: error groups, their evidence, analyses, sessions
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        texts["state file"] = "\n".join(str(row) for t in tables for row in db.execute(f"SELECT * FROM {t}"))
    assert "DNS lookup failed: ***.invalid" in texts["state file"]
    basic = base64.b64encode(f"ci:{CHECK_SECRET}".encode()).decode()
    for secret in (SESSION_SECRET, ACCOUNT_SECRET, CHECK_SECRET, HOST_SECRET, basic):
        for spelling in spellings(secret):
            leaks = [where for where, text in texts.items() if spelling.lower() in text.lower()]
            assert not leaks, f"{spelling!r} appears in {leaks} (in some case)"
