"""Sessions whose checks run for real: the emulator executes API, URL, TCP and DNS checks against
servers on loopback, over its real HTTP API, and shows what happened as the service would."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import requests
from checks_servers import DnsServer, HttpServer, free_port
from conftest import auth_headers

from runner.core.messages import clean_message
from runner.emulator import Emulator

KEY = "tsk_real_checks_0123456789"
DEMO_KEY = "tsk_demo_real_checks_0123"
ACCOUNT = "acc-real"


def status(target: str = "200") -> dict[str, str]:
    return {"source": "STATUS_CODE", "comparison": "EQUALS", "target": target}


def api(name: str, url: str, *assertions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    request = {"method": "GET", "url": url, "assertions": list(assertions), **fields.pop("request", {})}
    return {"id": name, "name": name, "checkType": "API", "tags": ["real"], "request": request, **fields}


def world(*checks: dict[str, Any], **settings: Any) -> dict[str, Any]:
    account: dict[str, Any] = {
        "id": ACCOUNT,
        "keys": [{"key": KEY}, {"key": DEMO_KEY}],
        "checks": list(checks),
    }
    account.update(settings.pop("account", {}))
    return {"settings": {"analysisDelaySeconds": 0, **settings}, "accounts": [account]}


class Api:
    def __init__(self, emu: Emulator, key: str = KEY) -> None:
        self.emu = emu
        self.headers = auth_headers(emu, key, ACCOUNT)

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.emu.url + path, headers=self.headers, timeout=15, **kwargs)

    def trigger(self, **body: Any) -> dict[str, Any]:
        body = {"name": "real", "runLocation": "eu-west-1", **body}
        response = self.call("POST", "/v1/test-sessions/trigger", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def session(self, session_id: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/v1/test-sessions/{session_id}").json())

    def final(self, session_id: str, within: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while True:
            session = self.session(session_id)
            if session["status"] != "RUNNING" or time.monotonic() > deadline:
                return session
            time.sleep(0.02)

    def group(self, group_id: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/v1/test-session-error-groups/{group_id}").json())

    def analysis(self, group_id: str) -> dict[str, Any]:
        created = self.call("POST", f"/v1/root-cause-analyses/test-session-error-groups/{group_id}")
        assert created.status_code == 202, created.text
        return dict(self.call("GET", f"/v1/root-cause-analyses/{created.json()['id']}").json())


def finals(session: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in session["results"] if r["resultType"] == "FINAL"}


def attempts(session: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r for r in session["results"] if r["resultType"] == "ATTEMPT" and r["name"] == name]


@pytest.fixture
def start(world_factory: Callable[..., Emulator]) -> Callable[..., Api]:
    def started(data: dict[str, Any], key: str = KEY) -> Api:
        return Api(world_factory(data), key)

    return started


def at(timestamp: str) -> datetime:
    """A session's ISO time ("Z" spelled out: Python 3.10's fromisoformat does not read it)."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


RETRY_ONCE = {"type": "FIXED", "baseBackoffSeconds": 0, "maxRetries": 1, "maxDurationSeconds": 60}


def test_every_outcome_of_real_checks_beside_a_scripted_one(
    start: Callable[..., Api], web: HttpServer, tcp_port: int, dns_server: DnsServer
) -> None:
    flaky = uuid.uuid4().hex
    closed = free_port()
    client = start(
        world(
            api("passes", web.url("/json"), status("200")),
            api("fails", web.url("/status/503"), status("200")),
            api(
                "slow", web.url("/slow?ms=300"), status("200"), degradedResponseTime=100, maxResponseTime=5000
            ),
            api("too slow", web.url("/slow?ms=3000"), maxResponseTime=300),
            api("refused", f"http://127.0.0.1:{closed}/health"),
            api("flaky", web.url(f"/flaky?key={flaky}&fail=1"), status("200")),
            {
                "id": "url",
                "name": "url",
                "checkType": "URL",
                "tags": ["real"],
                "request": {"url": web.url("/redirect"), "assertions": [status("200")]},
            },
            {
                "id": "tcp",
                "name": "tcp",
                "checkType": "TCP",
                "tags": ["real"],
                "request": {
                    "hostname": "127.0.0.1",
                    "port": tcp_port,
                    "data": "PING\n",
                    "assertions": [{"source": "RESPONSE_DATA", "comparison": "CONTAINS", "target": "PONG"}],
                },
            },
            {
                "id": "dns",
                "name": "dns",
                "checkType": "DNS",
                "tags": ["real"],
                "request": {
                    "query": "app.test",
                    "recordType": "A",
                    "nameServer": "127.0.0.1",
                    "port": dns_server.port,
                    "assertions": [{"source": "TEXT_ANSWER", "comparison": "CONTAINS", "target": "10.1.2.3"}],
                },
            },
            {
                "id": "scripted",
                "name": "scripted",
                "tags": ["real"],
                "behaviour": "pass",
                "durationSeconds": 2,
            },
        )
    )
    triggered = client.trigger(retryStrategy=RETRY_ONCE)
    assert triggered["status"] == "RUNNING"
    session = client.final(triggered["testSessionId"])
    assert session["status"] == "FAILED"
    final = finals(session)
    assert {n: r["status"] for n, r in final.items()} == {
        "passes": "PASSED", "fails": "FAILED", "slow": "PASSED", "too slow": "FAILED", "refused": "FAILED",
        "flaky": "PASSED", "url": "PASSED", "tcp": "PASSED", "dns": "PASSED", "scripted": "PASSED",
    }  # fmt: skip
    # A failed assertion: hasFailures, with what was expected and what came back.
    assert final["fails"]["hasFailures"] and not final["fails"]["hasErrors"]
    assert final["fails"]["errorMessage"] == "STATUS_CODE EQUALS 200: received 503"
    assert len(attempts(session, "fails")) == 1  # retried once, as the session's strategy says
    # Degraded: passed, slower than degradedResponseTime; responseTime is the real time in ms.
    assert final["slow"]["isDegraded"] and 300 <= final["slow"]["responseTime"] < 3000
    assert not final["passes"]["isDegraded"] and final["passes"]["responseTime"] < 1000
    # Timed out and refused: errors whose message names the kind and the address.
    assert final["too slow"]["hasErrors"] and not final["too slow"]["hasFailures"]
    assert final["too slow"]["errorMessage"].startswith(
        "timeout: no complete response within the maxResponseTime"
    )
    assert final["refused"]["hasErrors"]
    assert final["refused"]["errorMessage"] == f"connection refused: 127.0.0.1:{closed}"
    # Flaky: a failed ATTEMPT row, then the passing FINAL.
    assert [a["status"] for a in attempts(session, "flaky")] == ["FAILED"]
    assert attempts(session, "flaky")[0]["errorGroupIds"] and not final["flaky"]["errorGroupIds"]
    # The scripted check still plays its script: 2 simulated seconds.
    assert final["scripted"]["responseTime"] == 2000
    failed_groups = {g for name in ("fails", "too slow", "refused") for g in final[name]["errorGroupIds"]}
    assert len(failed_groups) == 3 and failed_groups <= set(session["errorGroupIds"])


def test_attempts_are_revealed_as_they_finish(start: Callable[..., Api], web: HttpServer) -> None:
    key = uuid.uuid4().hex
    client = start(world(api("flaky", web.url(f"/flaky?key={key}&fail=1"), status("200"))))
    retry = {**RETRY_ONCE, "baseBackoffSeconds": 25}  # simulated: 1 real second at TEST_SPEED
    session_id = client.trigger(retryStrategy=retry)["testSessionId"]
    deadline = time.monotonic() + 5
    while not attempts(session := client.session(session_id), "flaky") and time.monotonic() < deadline:
        time.sleep(0.02)
    # The first attempt failed and shows; the retry waits out its backoff, so the FINAL still runs.
    assert [a["status"] for a in attempts(session, "flaky")] == ["FAILED"]
    assert finals(session)["flaky"]["status"] == "RUNNING" and session["status"] == "RUNNING"
    done = client.final(session_id)
    first, last = attempts(done, "flaky")[0], finals(done)["flaky"]
    assert last["status"] == "PASSED" and done["status"] == "PASSED"
    # As times, not strings: a time on a whole second is written without its fraction ("...:00Z" sorts
    # after "...:00.066000Z"; seen once under load).
    assert at(first["stoppedAt"]) <= at(last["startedAt"]) <= at(last["stoppedAt"]), (first, last)


def test_a_retry_backoff_is_simulated_time_scaled_by_the_worlds_speed(
    world_factory: Callable[..., Emulator], web: HttpServer
) -> None:
    key = uuid.uuid4().hex
    flaky = world(api("flaky", web.url(f"/flaky?key={key}&fail=1"), status("200")), speed=10)
    client = Api(world_factory(flaky, speed=None))  # the world's own speed: 10
    retry = {**RETRY_ONCE, "baseBackoffSeconds": 4}
    done = client.final(client.trigger(retryStrategy=retry)["testSessionId"])
    first, last = attempts(done, "flaky")[0], finals(done)["flaky"]
    assert last["status"] == "PASSED" and done["status"] == "PASSED"
    # The times are the world's clock (10 simulated seconds a real one): 4 simulated seconds between
    # the failed attempt and the retry. Unscaled, the 4 s would be real and read as 40 simulated ones;
    # the margin is a real second of scheduling on a loaded machine (no wall-clock window: one of 2 s
    # around the whole session failed under load).
    gap = at(last["startedAt"]) - at(first["stoppedAt"])
    assert 3.9 <= gap.total_seconds() < 4 + 10, gap


def test_variables_come_from_the_session_then_the_account_then_the_check(
    start: Callable[..., Api], web: HttpServer
) -> None:
    def echoed(name: str, value: str) -> dict[str, str]:
        return {
            "source": "JSON_BODY",
            "property": f"$.headers['x-{name}']",
            "comparison": "EQUALS",
            "target": value,
        }

    headers = [{"key": f"X-{n}", "value": f"{{{{{n}}}}}"} for n in ("A", "B", "C")]
    echo = api(
        "echo", web.url("/echo"), echoed("a", "session"), echoed("b", "account"), echoed("c", "check"),
        request={"headers": headers},
        environmentVariables=[{"key": n, "value": "check"} for n in ("A", "B", "C")],
    )  # fmt: skip
    unknown = api("unknown", web.url("/echo?v={{NOT_SET}}"))
    account = {"environmentVariables": [{"key": "A", "value": "account"}, {"key": "B", "value": "account"}]}
    client = start(world(echo, unknown, account=account))
    session = client.final(
        client.trigger(environmentVariables=[{"key": "A", "value": "session"}])["testSessionId"]
    )
    final = finals(session)
    assert final["echo"]["status"] == "PASSED", final["echo"]
    assert final["unknown"]["status"] == "FAILED" and final["unknown"]["hasErrors"]
    assert "unknown variable NOT_SET in request.url" in final["unknown"]["errorMessage"]


def test_a_check_that_cannot_run_here_fails_closed_or_is_left_out(
    start: Callable[..., Api], web: HttpServer
) -> None:
    browser = {
        "id": "b", "name": "Checkout journey", "checkType": "AGENTIC", "tags": ["real", "browser"],
        "runsLocally": False,
    }  # fmt: skip
    data = world(browser, api("passes", web.url("/json")))
    client = start(data)
    session = client.final(client.trigger()["testSessionId"])
    result = finals(session)["Checkout journey"]
    assert session["status"] == "FAILED" and result["status"] == "FAILED" and result["hasErrors"]
    assert result["errorMessage"].startswith("cannot run on this machine: AGENTIC checks cannot run locally")
    assert "settings.notRunnable: skip" in result["errorMessage"]
    analysis = client.analysis(result["errorGroupIds"][0])["analysis"]
    assert analysis["classification"] == "CONFIGURATION ERROR" and "notRunnable: skip" in analysis["codeFix"]
    # skip: left out of the session; a target of only such checks matches nothing.
    data["settings"]["notRunnable"] = "skip"
    client = start(data)
    session = client.final(client.trigger()["testSessionId"])
    assert session["status"] == "PASSED" and list(finals(session)) == ["passes"]
    body = {"name": "x", "runLocation": "eu-west-1", "target": {"matchTags": [["browser"]]}}
    assert client.call("POST", "/v1/test-sessions/trigger", json=body).status_code in (403, 404)


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
@pytest.mark.parametrize("how", ["cancel", "reset", "stop"])
def test_cancel_reset_and_stop_end_a_real_run_within_a_second(
    start: Callable[..., Api], web: HttpServer, how: str
) -> None:
    # One worker: the next check runs only once the stopped one has really ended.
    key = uuid.uuid4().hex
    client = start(
        world(
            {**api("endless", web.url(f"/trickle?key={key}"), maxResponseTime=25_000), "tags": ["endless"]},
            {**api("quick", web.url("/json")), "tags": ["quick"]},
            executor={"concurrency": 1},
        )
    )
    emu = client.emu
    session_id = client.trigger(target={"matchTags": [["endless"]]})["testSessionId"]
    deadline = time.monotonic() + 10
    while not web.server.counts.get(key):  # type: ignore[attr-defined]  # the request is under way
        assert time.monotonic() < deadline
        time.sleep(0.01)
    if how == "cancel":
        assert client.call("POST", f"/v1/test-sessions/{session_id}/cancel").status_code == 204
        assert client.session(session_id)["status"] == "CANCELLED"
    elif how == "reset":
        emu.backend.reset()
    else:
        emu.stop()
    started = time.monotonic()
    if how == "stop":  # the server is gone; the core still takes a trigger
        from runner.models import TriggerRequest

        body = {"name": "q", "runLocation": "eu-west-1", "target": {"matchTags": [["quick"]]}}
        quick_id = emu.backend.trigger(ACCOUNT, TriggerRequest.model_validate(body)).testSessionId
        while (
            emu.backend.get_session(ACCOUNT, quick_id).status == "RUNNING" and time.monotonic() - started < 10
        ):
            time.sleep(0.02)
        status_now = emu.backend.get_session(ACCOUNT, quick_id).status
    else:
        status_now = client.final(client.trigger(target={"matchTags": [["quick"]]})["testSessionId"])[
            "status"
        ]
    assert status_now == "PASSED"
    # The quick check ran after the endless one ended (its 25 s bound, its answer's 50 s): within a
    # second, as docs/emulator.md says, plus half a second for the quick check itself.
    assert time.monotonic() - started < 1.5


def test_no_more_real_runs_at_once_than_the_world_allows(start: Callable[..., Api], web: HttpServer) -> None:
    checks = [api(f"slow {i}", web.url("/slow?ms=300")) for i in range(4)]
    client = start(world(*checks, executor={"concurrency": 2}))
    started = time.monotonic()
    session = client.final(client.trigger()["testSessionId"])
    assert session["status"] == "PASSED"
    assert time.monotonic() - started >= 0.6  # 4 runs of 300 ms, 2 at a time


def test_a_waiting_checks_row_shows_its_real_start_once_a_worker_takes_it(
    start: Callable[..., Api], web: HttpServer
) -> None:
    """Reads of a running session reuse the rows of runs that did not change; a run that waited for
    the one worker shows when it really started, not the trigger's time it was shown with before."""
    # The second runs 5 s: it is still running when its new start is seen, however loaded the machine.
    client = start(world(api("first", web.url("/slow?ms=400")), api("second", web.url("/slow?ms=5000")),
                         executor={"concurrency": 1}))  # fmt: skip
    session_id = client.trigger()["testSessionId"]
    waiting = [finals(client.session(session_id))["second"] for _ in range(3)]
    assert all(row["status"] == "RUNNING" for row in waiting)
    deadline = time.monotonic() + 10
    while (first := finals(client.session(session_id))["first"])["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # Read until the worker has taken the second check (no fixed sleep: a loaded machine is late).
    while (second := finals(client.session(session_id))["second"])["startedAt"] == waiting[0]["startedAt"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert second["status"] == "RUNNING"
    assert at(second["startedAt"]) >= at(first["stoppedAt"]) > at(waiting[0]["startedAt"])


def test_real_failures_group_by_message_and_analyses_cite_what_happened(
    start: Callable[..., Api], web: HttpServer
) -> None:
    closed = free_port()
    client = start(
        world(
            api("cart", web.url("/status/503"), status("200")),
            api("down", f"http://127.0.0.1:{closed}/"),
            api("slow", web.url("/slow?ms=1200"), status("200"), maxResponseTime=800),
            api("hostile", web.url("/hostile"), status("200")),
        )
    )
    first = finals(client.final(client.trigger()["testSessionId"]))
    second = finals(client.final(client.trigger()["testSessionId"]))
    # The same failure in two sessions is one group.
    assert first["cart"]["errorGroupIds"] == second["cart"]["errorGroupIds"]
    group = client.group(first["cart"]["errorGroupIds"][0])
    assert group["rawErrorMessage"] == "STATUS_CODE EQUALS 200: received 503"
    # What the failure is stays in its key (checks/fingerprint.py); a port or an address does not.
    assert group["cleanedErrorMessage"] == "STATUS_CODE EQUALS 200: received 503"
    down_group = client.group(first["down"]["errorGroupIds"][0])
    assert down_group["cleanedErrorMessage"] == "connection refused: <ip>:<port>"

    cart = client.analysis(group["id"])
    assert cart["model"] == "rules-v1/run-http-status"
    text = cart["analysis"]
    assert text["classification"] == "INFRA ERROR"
    assert "answered 503 Service Unavailable" in text["rootCause"] and "first byte at" in text["rootCause"]
    assert "STATUS_CODE EQUALS 200: received 503" in text["rootCause"]
    assert "its body began: status 503" in text["rootCause"]  # the first bytes of the body
    artifacts = {a["name"]: e["description"] for e in text["evidence"] for a in e["artifacts"]}
    assert set(artifacts) == {"HTTP_REQUEST", "TIMING_PHASES"}
    assert "connect" in artifacts["TIMING_PHASES"] and "first byte" in artifacts["TIMING_PHASES"]

    down = client.analysis(first["down"]["errorGroupIds"][0])["analysis"]
    assert f"Nothing listens at 127.0.0.1:{closed}" in down["rootCause"]

    slow = client.analysis(first["slow"]["errorGroupIds"][0])["analysis"]
    assert slow["classification"] == "TIMEOUT"
    assert "The time went to waiting for the first byte" in slow["rootCause"]

    hostile = client.analysis(first["hostile"]["errorGroupIds"][0])["analysis"]
    everything = str(hostile)
    assert "boom" in everything  # quoted, but made harmless
    for bad in ("\x1b", "\r", "\n", "\u202e"):
        assert bad not in everything
    assert "::error::" not in hostile["rootCause"].split("began: ")[1][:2]


def test_an_exposed_emulator_runs_real_checks_only_for_keys_of_its_own(web: HttpServer) -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.254", 9))  # no packet is sent: only picks the outgoing interface
        address = str(probe.getsockname()[0])
    except OSError:
        pytest.skip("no non-loopback interface")
    finally:
        probe.close()
    if address.startswith("127."):
        pytest.skip("no non-loopback interface")
    key = uuid.uuid4().hex
    check = api("counted", web.url(f"/flaky?key={key}&fail=0"), status("200"))
    with Emulator(world=world(check), host=address) as emu:
        demo = Api(emu, DEMO_KEY)
        refused = finals(demo.final(demo.trigger()["testSessionId"]))["counted"]
        assert refused["status"] == "FAILED" and refused["hasErrors"]
        assert "never for the documented demo key" in refused["errorMessage"]
        assert web.server.counts.get(key) is None  # type: ignore[attr-defined]  # nothing was sent
        own = Api(emu, KEY)
        assert finals(own.final(own.trigger()["testSessionId"]))["counted"]["status"] == "PASSED"
        assert web.server.counts[key] == 1  # type: ignore[attr-defined]


def test_real_messages_group_across_ports_and_durations() -> None:
    same = [
        "connection refused: 127.0.0.1:8380",
        "connection refused: 127.0.0.1:41234",
    ]
    assert len({clean_message(m) for m in same}) == 1
    slow = [
        "response time 1503 ms exceeded the maxResponseTime of 1000 ms: 127.0.0.1:8380",
        "response time 1497.25 ms exceeded the maxResponseTime of 1000 ms: 127.0.0.1:39001",
    ]
    assert len({clean_message(m) for m in slow}) == 1
    status_line = "received HTTP 502 from GET http://localhost:8380/api/payments: 4xx and 5xx responses fail"
    other_port = status_line.replace("8380", "9000")
    assert clean_message(status_line) == clean_message(other_port)
    tcp = [
        "timeout: no answer within 3000 ms: localhost:8381",
        "timeout: no answer within 3000 ms: localhost:9381",
    ]
    assert len({clean_message(m) for m in tcp}) == 1


def test_tcp_and_dns_failures_are_analysed_from_their_answers(
    start: Callable[..., Api], tcp_port: int, dns_server: DnsServer
) -> None:
    def dns(name: str, query: str, *assertions: dict[str, str]) -> dict[str, Any]:
        request = {"query": query, "recordType": "A", "nameServer": "127.0.0.1", "port": dns_server.port,
                   "assertions": list(assertions)}  # fmt: skip
        return {"id": name, "name": name, "checkType": "DNS", "tags": ["real"], "request": request}

    tcp = {
        "id": "tcp", "name": "tcp", "checkType": "TCP", "tags": ["real"],
        "request": {"hostname": "127.0.0.1", "port": tcp_port, "data": "HELLO\n",
                    "assertions": [{"source": "RESPONSE_DATA", "comparison": "CONTAINS", "target": "PONG"}]},
    }  # fmt: skip
    client = start(world(tcp, dns("missing", "nope.app.test")))
    final = finals(client.final(client.trigger()["testSessionId"]))
    assert final["tcp"]["errorMessage"] == "RESPONSE_DATA CONTAINS PONG: received hello there"
    tcp_analysis = client.analysis(final["tcp"]["errorGroupIds"][0])
    assert tcp_analysis["model"] == "rules-v1/run-assertion"
    assert f"CONNECT 127.0.0.1:{tcp_port} answered" in tcp_analysis["analysis"]["rootCause"]
    names = {a["name"] for e in tcp_analysis["analysis"]["evidence"] for a in e["artifacts"]}
    assert names == {"TCP_REQUEST", "TIMING_PHASES"}
    assert final["missing"]["errorMessage"].startswith("DNS answer NXDOMAIN for nope.app.test A")
    dns_analysis = client.analysis(final["missing"]["errorGroupIds"][0])
    assert dns_analysis["model"] == "rules-v1/run-dns-response-code"
    assert (
        f"The name server at 127.0.0.1:{dns_server.port} answered NXDOMAIN"
        in (dns_analysis["analysis"]["rootCause"])
    )


def test_tcp_and_dns_fields_take_the_sessions_and_the_accounts_variables(
    start: Callable[..., Api], tcp_port: int, dns_server: DnsServer
) -> None:
    tcp = {
        "id": "tcp", "name": "tcp", "checkType": "TCP", "tags": ["real"],
        "request": {"hostname": "{{HOST}}", "port": "{{TCP_PORT}}", "data": "PING\n",
                    "assertions": [{"source": "RESPONSE_DATA", "comparison": "CONTAINS", "target": "PONG"}]},
    }  # fmt: skip
    dns = {
        "id": "dns", "name": "dns", "checkType": "DNS", "tags": ["real"],
        "request": {"query": "{{ZONE}}", "recordType": "A", "nameServer": "{{HOST}}:{{DNS_PORT}}",
                    "assertions": [{"source": "RESPONSE_CODE", "comparison": "EQUALS", "target": "NOERROR"}]},
    }  # fmt: skip
    lost = {**tcp, "id": "lost", "name": "lost", "request": {**tcp["request"], "port": "{{NO_SUCH_PORT}}"}}
    account = {"environmentVariables": [
        {"key": "HOST", "value": "127.0.0.1"}, {"key": "TCP_PORT", "value": str(tcp_port)},
        {"key": "DNS_PORT", "value": str(dns_server.port)}, {"key": "ZONE", "value": "nope.app.test"},
    ]}  # fmt: skip
    client = start(world(tcp, dns, lost, account=account))
    zone = [{"key": "ZONE", "value": "app.test"}]
    session = client.final(client.trigger(environmentVariables=zone)["testSessionId"])
    final = finals(session)
    assert final["tcp"]["status"] == "PASSED", final["tcp"]
    assert final["dns"]["status"] == "PASSED", final["dns"]  # the session's ZONE wins over the account's
    assert final["lost"]["status"] == "FAILED" and final["lost"]["hasErrors"]
    assert final["lost"]["errorMessage"].startswith("unknown variable NO_SUCH_PORT in request.port")


def test_a_body_assertion_on_a_body_cut_at_the_read_cap_fails_closed(
    start: Callable[..., Api], web: HttpServer
) -> None:
    """trial25's finding 7: NOT_CONTAINS FATAL passed on the first bytes of a body whose FATAL came after
    the read cap. Now it fails, saying where the body was cut and how to raise the cap."""
    beyond = web.url("/big?bytes=4096&tail=FATAL")
    client = start(
        world(
            api("fatal beyond the cap", beyond,
                {"source": "TEXT_BODY", "comparison": "NOT_CONTAINS", "target": "FATAL"}),
            api("status only", beyond, status("200")),
            executor={"bodyBytes": 1024},
        )
    )  # fmt: skip
    session = client.final(client.trigger()["testSessionId"])
    results = finals(session)
    cut = results["fatal beyond the cap"]
    assert cut["status"] == "FAILED" and cut["hasFailures"]
    assert cut["errorMessage"] == (
        "TEXT_BODY NOT_CONTAINS FATAL: body truncated at 1024 bytes: this assertion cannot be judged on "
        "part of the body; raise settings.executor.bodyBytes in the world (at most 64 MiB; production "
        "reads up to 25 MB)"
    )
    assert cut["bodyTruncated"] == "body truncated at 1024 bytes"
    # Passed, the result still says that it read only part of the body.
    passed = results["status only"]
    assert passed["status"] == "PASSED" and passed["bodyTruncated"] == "body truncated at 1024 bytes"
    assert "errorMessage" not in passed  # an extra field, only where there is something to say
    page = requests.get(passed["testSessionResultLink"], timeout=5).text
    assert "body truncated at 1024 bytes" in page

    analysis = client.analysis(cut["errorGroupIds"][0])
    assert analysis["model"] == "rules-v1/run-body-truncated"
    assert analysis["analysis"]["classification"] == "CONFIGURATION ERROR"
    assert "settings.executor.bodyBytes" in analysis["analysis"]["codeFix"]
    assert "body truncated at 1024 bytes" in analysis["analysis"]["rootCause"]
