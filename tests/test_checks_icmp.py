"""ICMP and TRACEROUTE checks for real, against loopback (and a network namespace of the test's own).

What this machine allows decides what runs: a ping socket (net.ipv4.ping_group_range) or a raw
socket (CAP_NET_RAW, root). Where neither can be opened, the tests that send pings are skipped with
that reason, loudly; the permission tests then still run. An unreachable host is an address routed
into a veth pair inside a network namespace the test makes with `unshare --net` (root): its packets
never leave this machine (192.0.2.1, TEST-NET-1, is this sandbox's own gateway: never a target).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CI_PREFIXES, run_here

from runner.checks import run_check
from runner.checks.analysis.by_evidence import analyse_run
from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.protocols.icmp_sockets import (
    NoSocket,
    SocketMode,
    open_socket,
    permission_message,
    ping_group_range,
)
from runner.checks.protocols.pinging import PingRun, Reply, ping
from runner.checks.protocols.tracing import trace
from runner.models.check_definitions import IcmpCheckDefinition, parse_check_definition


def _can_open(modes: tuple[SocketMode, ...], family: int = socket.AF_INET) -> str | None:
    """None when this process may open one of `modes`, else why not."""
    try:
        sock, _ = open_socket(family, modes)
    except NoSocket as exc:
        return str(exc)
    sock.close()
    return None


PING_WHY = _can_open((SocketMode.PING, SocketMode.RAW))
RAW_WHY = _can_open((SocketMode.RAW,))
needs_ping = pytest.mark.skipif(PING_WHY is not None, reason=f"SKIPPED LOUDLY: cannot send pings: {PING_WHY}")
needs_raw = pytest.mark.skipif(RAW_WHY is not None, reason=f"SKIPPED LOUDLY: no raw ICMP socket: {RAW_WHY}")


def _has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            sock.connect(("::1", 9))
        return True
    except OSError:
        return False


IPV6 = _has_ipv6()
# ip(8) and unshare(1) as root make the namespace; without them the unreachable tests are skipped.
NETNS_WHY = (
    None
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip")
    else "needs root, unshare and ip to make a network namespace"
)
NAMESPACE = (
    "ip link set lo up && ip link add v0 type veth peer name v1 && ip addr add 198.51.100.1/24 dev v0 && "
    "ip link set v0 up && ip link set v1 up && "
    # 198.51.100.7 answers nothing: its frames go to the peer, which has no address (silent loss).
    "ip neigh add 198.51.100.7 lladdr 02:00:00:00:00:09 dev v0 nud permanent && "
    # Ping sockets allowed for every group in this namespace only (the sysctl is per namespace).
    "sysctl -qw net.ipv4.ping_group_range='0 2147483647' && exec \"$@\""
)


# A route through a router, all in namespaces of the test's own: A (198.51.100.1, where the trace
# runs) -> R (198.51.100.2 | 203.0.113.1, forwarding, ICMP not rate-limited) -> S (203.0.113.2). R and
# S are `unshare --net sleep` children (ended at the end, and by themselves within 30 s).
ROUTED = (
    "set -e; ip link set lo up; unshare --net sleep 30 & R=$!; unshare --net sleep 30 & S=$!; sleep 0.2; "
    "ip link add a0 type veth peer name r0; ip link set r0 netns $R; "
    "nsenter -t $R -n ip link add r1 type veth peer name s0; nsenter -t $R -n ip link set s0 netns $S; "
    "ip addr add 198.51.100.1/24 dev a0; ip link set a0 up; ip route add default via 198.51.100.2; "
    "nsenter -t $R -n sh -c 'ip link set lo up; ip addr add 198.51.100.2/24 dev r0; ip link set r0 up; "
    "ip addr add 203.0.113.1/24 dev r1; ip link set r1 up; sysctl -qw net.ipv4.ip_forward=1; "
    "sysctl -qw net.ipv4.icmp_ratelimit=0'; "
    "nsenter -t $S -n sh -c 'ip link set lo up; ip addr add 203.0.113.2/24 dev s0; ip link set s0 up; "
    "ip route add default via 203.0.113.1'; "
    'set +e; "$@"; status=$?; kill $R $S; exit $status'
)
TRACES = """
import json, time
from runner.checks import run_check
from runner.checks.protocols.tracing import trace
from runner.models.check_definitions import IcmpCheckDefinition, parse_check_definition
out = {}
for protocol, port in (("TCP", 443), ("UDP", 33434), ("ICMP", 443)):
    t = trace("203.0.113.2", protocol=protocol, port=port, ip_family="IPv4", max_hops=5, max_unknown_hops=3,
              ptr_lookup=False, deadline=time.monotonic() + 10)
    out[protocol] = {"reached": t.reached, "hops": [[h.address, h.received] for h in t.hops]}
c = parse_check_definition({"name": "path", "checkType": "TRACEROUTE", "request": {"url": "203.0.113.2",
    "assertions": [{"source": "HOP_COUNT", "comparison": "EQUALS", "target": "2"},
                   {"source": "PACKET_LOSS", "comparison": "EQUALS", "target": "0"}]}})
a = run_check(c, max_run_seconds=30).final
out["check"] = {"passed": a.passed, "message": a.message, "excerpt": a.body_excerpt}
print(json.dumps(out))
"""


# Each scenario on its own thread in one child process (one interpreter start, the waits overlap):
# what it saw, as JSON.
SILENT_HOST = """
import json, threading, time
from runner.checks import run_check
from runner.checks.analysis.by_evidence import analyse_run
from runner.checks.protocols.pinging import ping
from runner.checks.protocols.tracing import trace
from runner.models.check_definitions import IcmpCheckDefinition, parse_check_definition

def check(kind, request):
    c = parse_check_definition({"name": "net", "checkType": kind, "request": request})
    a = run_check(c, max_run_seconds=30).final
    rule = analyse_run(a, a.message, kind, "net")[1]
    return {"class": str(a.error_class), "kind": str(a.error_kind), "message": a.message,
            "ms": a.duration_ms, "network": a.network_failure, "rule": rule}

def pings():
    r = ping("198.51.100.7", "IPv4", 2, deadline=time.monotonic() + 10)
    return {"sent": r.packets_sent, "received": r.packets_received, "loss": r.packet_loss, "ms": r.elapsed_ms}

def traced():
    t = trace("198.51.100.7", protocol="TCP", port=443, ip_family="IPv4", max_hops=30, max_unknown_hops=2,
              ptr_lookup=True, deadline=time.monotonic() + 10)
    return {"reached": t.reached, "truncation": t.truncation, "hops": len(t.hops), "ms": t.elapsed_ms}

def stopped():
    stop = threading.Event()
    set_at = []
    threading.Timer(0.3, lambda: (set_at.append(time.monotonic()), stop.set())).start()
    t = trace("198.51.100.7", protocol="UDP", port=33434, ip_family="IPv4", max_hops=30, max_unknown_hops=15,
              ptr_lookup=False, deadline=time.monotonic() + 10, stop=stop)
    return {"cancelled": t.cancelled, "ms": (time.monotonic() - set_at[0]) * 1000}

def unprivileged():
    from runner.checks.protocols.icmp_sockets import SocketMode
    r = ping("127.0.0.1", "IPv4", 3, deadline=time.monotonic() + 5, interval=0.05, modes=(SocketMode.PING,))
    return {"mode": r.mode.value if r.mode else r.no_socket, "received": r.packets_received}

jobs = {"ping": pings, "trace": traced, "stopped": stopped, "unprivileged": unprivileged,
        "icmp": lambda: check("ICMP", {"hostname": "198.51.100.7", "pingCount": 2}),
        "traceroute": lambda: check("TRACEROUTE", {"url": "198.51.100.7", "maxUnknownHops": 2})}
out = {}
threads = [threading.Thread(target=lambda n=n, f=f: out.__setitem__(n, f())) for n, f in jobs.items()]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out))
"""
# As nobody, without CAP_NET_RAW (setpriv): neither kind of socket.
NO_SOCKETS = """
import json, time
from runner.checks import run_check
from runner.checks.protocols.pinging import ping
from runner.models import RetryStrategy
from runner.models.check_definitions import IcmpCheckDefinition, parse_check_definition
c = parse_check_definition({"name": "p", "checkType": "ICMP", "request": {"hostname": "127.0.0.1"}})
r = run_check(c, max_run_seconds=30, retry=RetryStrategy(type="FIXED", baseBackoffSeconds=0, maxRetries=2))
no_socket = ping("127.0.0.1", "IPv4", 1, deadline=time.monotonic() + 5).no_socket
print(json.dumps({"no_socket": no_socket, "attempts": len(r.attempts), "class": str(r.final.error_class),
                  "kind": str(r.final.error_kind)}))
"""


@pytest.fixture(scope="module")
def silent_host() -> dict[str, Any]:
    """The scenarios of SILENT_HOST, run in a network namespace of their own (see NAMESPACE)."""
    if NETNS_WHY is not None or RAW_WHY is not None:
        pytest.skip(f"SKIPPED LOUDLY: {NETNS_WHY or RAW_WHY}")
    argv = ["unshare", "--net", "sh", "-c", NAMESPACE, "sh", sys.executable, "-c", SILENT_HOST]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


@pytest.fixture(scope="module")
def routed() -> dict[str, Any]:
    """TRACES run in A, two hops from S (see ROUTED)."""
    if NETNS_WHY is not None or RAW_WHY is not None or not shutil.which("nsenter"):
        pytest.skip(f"SKIPPED LOUDLY: {NETNS_WHY or RAW_WHY or 'needs nsenter'}")
    argv = ["unshare", "--net", "sh", "-c", ROUTED, "sh", sys.executable, "-c", TRACES]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


@pytest.fixture(scope="module")
def without_sockets() -> dict[str, Any]:
    if os.geteuid() != 0 or not shutil.which("setpriv") or _group_allowed():
        pytest.skip("SKIPPED LOUDLY: needs root and setpriv to run a process as nobody without CAP_NET_RAW")
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-net_raw", sys.executable, "-c", NO_SOCKETS]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


# A stop is looked at every 50 ms (sockets.SLICE); the rest is room for a loaded machine (2 cores,
# the suite's workers) to schedule the threads.
STOPPED_WITHIN = 0.25


def stop_after(stop: threading.Event, seconds: float) -> list[float]:
    """Sets `stop` after `seconds`; the list gets the monotonic time it was set."""
    set_at: list[float] = []
    threading.Timer(seconds, lambda: (set_at.append(time.monotonic()), stop.set())).start()
    return set_at


# --- pings ---------------------------------------------------------------------------------------------


@needs_ping
@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        pytest.param("::1", marks=pytest.mark.skipif(not IPV6, reason="SKIPPED LOUDLY: no IPv6 loopback")),
    ],
)
def test_loopback_answers_every_ping_with_its_latency(host: str) -> None:
    family = "IPv6" if ":" in host else "IPv4"
    run = ping(host, family, 3, deadline=time.monotonic() + 10, interval=0.05)
    assert (run.packets_sent, run.packets_received, run.packet_loss) == (3, 3, 0.0)
    latency = run.latency()
    assert latency is not None and 0 < latency["min"] <= latency["avg"] <= latency["max"] < 1000
    document = run.as_json()
    assert document["resolvedIp"] == host and document["packetSize"] == 64
    assert [r["success"] for r in document["pingResults"]] == [True, True, True]


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
@needs_ping
def test_a_stop_ends_the_pings_within_a_tenth_of_a_second() -> None:
    stop = threading.Event()
    set_at = stop_after(stop, 0.3)
    run = ping("127.0.0.1", "IPv4", 50, deadline=time.monotonic() + 30, stop=stop)
    assert run.cancelled and time.monotonic() - set_at[0] < STOPPED_WITHIN
    assert run.packets_sent < 50


@needs_ping
def test_a_name_that_does_not_resolve_sends_nothing() -> None:
    run = ping("no-such-host.invalid", "IPv4", 3, deadline=time.monotonic() + 10)
    assert run.lookup_failed and run.packets_sent == 0


# --- permissions ----------------------------------------------------------------------------------------


def test_the_message_names_the_sysctl_and_the_capability() -> None:
    both = permission_message((SocketMode.PING, SocketMode.RAW), group_range=(1, 0))
    assert "net.ipv4.ping_group_range = 1 0" in both and "sysctl -w net.ipv4.ping_group_range" in both
    assert "CAP_NET_RAW" in both and "--cap-add=NET_RAW" in both
    raw = permission_message((SocketMode.RAW,))
    assert "raw ICMP socket" in raw and "Time Exceeded" in raw and "ping_group_range" not in raw


def _group_allowed() -> bool:
    group_range = ping_group_range()
    return group_range is not None and group_range[0] <= os.getegid() <= group_range[1]


@pytest.mark.skipif(
    not os.path.exists("/proc/sys/net/ipv4/ping_group_range") or _group_allowed(),
    reason="SKIPPED LOUDLY: ping sockets are allowed for this group, so the kernel cannot refuse one",
)
def test_a_ping_socket_where_the_kernel_forbids_one_is_refused_with_the_sysctl() -> None:
    # Forced to the unprivileged kind on a machine whose ping_group_range leaves this group out: the
    # kernel itself refuses (EACCES); nothing is sent.
    run = ping("127.0.0.1", "IPv4", 1, deadline=time.monotonic() + 5, modes=(SocketMode.PING,))
    assert run.no_socket is not None and run.packets_sent == 0
    assert "net.ipv4.ping_group_range" in run.no_socket and f"gid {os.getegid()}" in run.no_socket


# --- traceroute -----------------------------------------------------------------------------------------


@needs_raw
@pytest.mark.parametrize(("protocol", "port"), [("TCP", 443), ("UDP", 33434), ("ICMP", 443)])
def test_a_trace_to_loopback_reaches_it_at_the_first_hop(protocol: str, port: int) -> None:
    result = trace("127.0.0.1", protocol=protocol, port=port, ip_family="IPv4", max_hops=30,
                   max_unknown_hops=15, ptr_lookup=True, deadline=time.monotonic() + 10)  # fmt: skip
    assert result.reached and result.truncation == "destinationReached"
    (hop,) = result.hops
    assert (hop.number, hop.address, hop.sent, hop.received, hop.loss) == (1, "127.0.0.1", 3, 3, 0.0)
    assert hop.host == socket.gethostbyaddr("127.0.0.1")[0]  # the PTR name, as the system resolves it
    assert result.final_latency() is not None and result.elapsed_ms < 3000


@needs_raw
@pytest.mark.parametrize(("protocol", "port"), [("TCP", 443), ("UDP", 33434), ("ICMP", 443)])
def test_answers_queued_when_a_hops_wait_ends_count(protocol: str, port: int) -> None:
    # A hop's wait of 0 s stands for a loaded machine that holds the thread past the wait: the
    # answers are queued by then (loopback answers at once) and came in time. Read one at a time,
    # a busy suite counted 2 of 3 lost.
    deadline = time.monotonic() + 10
    result = trace("127.0.0.1", protocol=protocol, port=port, ip_family="IPv4", max_hops=3,
                   max_unknown_hops=3, ptr_lookup=False, deadline=deadline, hop_wait=0.0)  # fmt: skip
    assert result.reached and [(h.address, h.received) for h in result.hops] == [("127.0.0.1", 3)]


@needs_raw
@pytest.mark.skipif(not IPV6, reason="SKIPPED LOUDLY: no IPv6 loopback")
def test_a_trace_to_ipv6_loopback_reaches_it_at_the_first_hop() -> None:
    result = trace("::1", protocol="TCP", port=443, ip_family="IPv6", max_hops=30, max_unknown_hops=15,
                   ptr_lookup=False, deadline=time.monotonic() + 10)  # fmt: skip
    assert result.reached and [h.address for h in result.hops] == ["::1"]


def test_sctp_probes_fail_closed_saying_which_protocols_work() -> None:
    result = trace("127.0.0.1", protocol="SCTP", port=33434, ip_family="IPv4", max_hops=30,
                   max_unknown_hops=15, ptr_lookup=False, deadline=time.monotonic() + 10)  # fmt: skip
    assert result.cannot_probe is not None and "use protocol TCP, UDP or ICMP" in result.cannot_probe
    assert not result.hops


# --- whole checks through the engine (run_check), judged and analysed -------------------------------


def _check(check_type: str, request: dict[str, Any], **fields: Any) -> Any:
    return parse_check_definition({"name": "net", "checkType": check_type, "request": request, **fields})


@needs_ping
def test_an_icmp_check_to_loopback_passes_its_latency_and_json_assertions() -> None:
    assertions = [
        {"source": "LATENCY", "property": "avg", "comparison": "LESS_THAN", "target": "100"},
        {"source": "JSON_RESPONSE", "property": "$.packetsReceived", "comparison": "EQUALS", "target": "3"},
    ]
    check = _check("ICMP", {"hostname": "127.0.0.1", "pingCount": 3, "assertions": assertions})
    started = time.monotonic()
    attempt = run_check(check, max_run_seconds=30).final
    assert attempt.passed and not attempt.degraded and attempt.error_class is None
    assert [a.passed for a in attempt.assertions] == [True, True]
    assert attempt.response_time_ms is not None and attempt.response_time_ms < 100  # the average RTT
    assert (attempt.body_excerpt or "").startswith("3 packets transmitted, 3 received, 0% packet loss")
    assert time.monotonic() - started < 3  # 2 intervals of 500 ms, then the last reply


@needs_ping
def test_a_reply_read_late_on_a_loaded_machine_is_still_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """icmplib drops a packet it read after its own time limit. Here every clock reading inside it is
    30 ms later than the one before (this thread waiting for the GIL), and no reply is lost."""
    import icmplib.sockets

    readings = iter(range(1_000_000))
    monkeypatch.setattr(icmplib.sockets, "time", lambda: time.time() + 0.03 * next(readings))
    run = ping("127.0.0.1", "IPv4", 3, deadline=time.monotonic() + 5, interval=0.05)
    assert (run.packets_sent, run.packets_received) == (3, 3)


@needs_ping
def test_a_failed_latency_assertion_fails_the_check_and_the_analysis_quotes_the_pings() -> None:
    assertion = {"source": "LATENCY", "property": "max", "comparison": "LESS_THAN", "target": "0"}
    attempt = run_check(_check("ICMP", {"hostname": "127.0.0.1", "pingCount": 2, "assertions": [assertion]}),
                        max_run_seconds=30).final  # fmt: skip
    assert (attempt.error_class, attempt.error_kind) == (ErrorClass.ASSERTION_FAILURE, FailureKind.ASSERTION)
    assert attempt.message is not None and attempt.message.startswith("LATENCY max LESS_THAN 0: received ")
    analysis, rule = analyse_run(attempt, attempt.message, "ICMP", "net")
    assert rule == "rules-v1/run-assertion"
    assert "2 packets transmitted, 2 received, 0% packet loss" in analysis.rootCause


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
@needs_ping
def test_a_stopped_icmp_check_is_cancelled_within_a_tenth_of_a_second() -> None:
    stop = threading.Event()
    set_at = stop_after(stop, 0.3)
    run = run_check(_check("ICMP", {"hostname": "127.0.0.1", "pingCount": 50}), max_run_seconds=60, stop=stop)
    assert run.cancelled and time.monotonic() - set_at[0] < STOPPED_WITHIN


def test_packet_loss_at_the_thresholds_degrades_then_fails() -> None:
    """The thresholds' rule on what a run saw (9 of 10, then 8 of 10 answered): production's
    "percentage at which the monitor is marked as degraded / failed"."""
    from runner.checks.protocols.icmp import loss_verdict

    check = _check("ICMP", {"hostname": "h"})  # defaults: degraded at 10 %, failed at 20 %
    assert loss_verdict(check, _run(received=10)) == (None, None)
    assert loss_verdict(check, _run(received=9)) == (
        "packet loss 10% reached the degradedPacketLossThreshold of 10%: 9 of 10 pings answered by 10.0.0.9",
        None,
    )
    degraded, failure = loss_verdict(check, _run(received=8))
    assert not degraded and failure is not None and failure.kind is FailureKind.PACKET_LOSS
    assert failure.message == (
        "packet loss 20% reached the maxPacketLossThreshold of 20%: 8 of 10 pings answered by 10.0.0.9"
    )
    strict = _check("ICMP", {"hostname": "h"}, degradedPacketLossThreshold=50, maxPacketLossThreshold=90)
    assert loss_verdict(strict, _run(received=8)) == (None, None)


def _run(received: int) -> PingRun:
    replies = tuple(Reply(i, i < received, 1.0 if i < received else None) for i in range(10))
    return PingRun("h", "IPv4", 10, resolved_ip="10.0.0.9", replies=replies, packets_sent=10)


@needs_raw
def test_a_traceroute_check_to_loopback_passes_hop_count_loss_and_response_time() -> None:
    assertions = [
        {"source": "HOP_COUNT", "comparison": "EQUALS", "target": "1"},
        {"source": "PACKET_LOSS", "comparison": "EQUALS", "target": "0"},
        {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "500"},  # avg by default
        {"source": "RESPONSE_TIME", "property": "max", "comparison": "LESS_THAN", "target": "500"},
    ]
    attempt = run_check(_check("TRACEROUTE", {"url": "127.0.0.1", "assertions": assertions}),
                        max_run_seconds=30).final  # fmt: skip
    assert attempt.passed, attempt.message
    assert [a.passed for a in attempt.assertions] == [True, True, True, True]
    assert (attempt.body_excerpt or "").startswith("1 hop, destination reached (destinationReached)")


@needs_raw
def test_a_traceroute_whose_final_hop_is_slower_than_max_response_time_fails_as_timeout() -> None:
    check = _check("TRACEROUTE", {"url": "127.0.0.1", "protocol": "ICMP"}, maxResponseTime=0.001)
    attempt = run_check(check, max_run_seconds=30).final
    # The limit judges the final hop's average RTT, not the run (the trace still had its 10 s).
    assert (attempt.error_class, attempt.error_kind) == (ErrorClass.TIMEOUT, FailureKind.MAX_RESPONSE_TIME)


def test_an_sctp_traceroute_and_a_url_with_a_scheme_are_not_run() -> None:
    sctp = run_check(_check("TRACEROUTE", {"url": "127.0.0.1", "protocol": "SCTP"}), max_run_seconds=30).final
    assert (sctp.error_class, sctp.error_kind) == (
        ErrorClass.CONFIGURATION_ERROR,
        FailureKind.NOT_RUNNABLE_LOCALLY,
    )
    assert sctp.message is not None and "use protocol TCP, UDP or ICMP" in sctp.message
    url = run_check(_check("TRACEROUTE", {"url": "https://example.test/"}), max_run_seconds=30).final
    assert url.message == "request.url: a host name or IP address only, without scheme, port or path"


# --- a silent host (a network namespace) and a process without sockets ----------------------------------


def test_a_silent_host_loses_every_ping_and_the_run_ends_at_its_last_reply_wait(
    silent_host: dict[str, Any],
) -> None:
    seen = silent_host["ping"]
    # 2 pings 500 ms apart, 2 s for the last reply: lost, and over in ~2.5 s, not at the bound.
    assert (seen["sent"], seen["received"], seen["loss"]) == (2, 0, 100.0) and 2400 <= seen["ms"] < 3500


def test_where_the_kernel_allows_ping_sockets_they_are_used_without_privilege(
    silent_host: dict[str, Any],
) -> None:
    # The namespace's ping_group_range admits every group: an unprivileged ping socket, whose replies
    # the kernel matches by the socket's own identifier.
    assert silent_host["unprivileged"] == {"mode": "ping socket", "received": 3}


def test_an_icmp_check_to_a_silent_host_fails_as_a_network_error_and_is_analysed(
    silent_host: dict[str, Any],
) -> None:
    seen = silent_host["icmp"]
    assert (seen["class"], seen["kind"], seen["network"]) == ("NETWORK_ERROR", "no_reply", True)
    assert seen["message"] == "no echo reply to 2 pings within 2 s each: 198.51.100.7"
    assert seen["rule"] == "rules-v1/run-no-reply" and seen["ms"] < 3500


def test_a_trace_to_a_silent_host_stops_after_max_unknown_hops(silent_host: dict[str, Any]) -> None:
    seen = silent_host["trace"]
    assert (seen["reached"], seen["truncation"], seen["hops"]) == (False, "maxUnknownHops", 2)
    assert seen["ms"] < 3000  # two hops of 1 s each


@pytest.mark.parametrize("protocol", ["TCP", "UDP", "ICMP"])
def test_a_trace_through_a_router_names_the_router_then_reaches_the_host(
    routed: dict[str, Any], protocol: str
) -> None:
    # The router's Time Exceeded is matched to the probe by the ports it quotes (TCP, UDP) or by the
    # echo's id and sequence (ICMP); the host by SYN-ACK/RST, port unreachable, echo reply.
    assert routed[protocol] == {"reached": True, "hops": [["198.51.100.2", 3], ["203.0.113.2", 3]]}


def test_a_traceroute_check_through_a_router_counts_its_hops(routed: dict[str, Any]) -> None:
    seen = routed["check"]
    assert seen["passed"], seen["message"]
    head, first, second = seen["excerpt"].splitlines()
    assert head.startswith("2 hops, destination reached (destinationReached); traceroute to 203.0.113.2")
    assert first.startswith("1  198.51.100.2  ") and first.endswith(" ms, 0% loss")
    assert second.startswith("2  203.0.113.2  ") and second.endswith(" ms, 0% loss")


def test_a_stop_ends_a_trace_within_a_tenth_of_a_second(silent_host: dict[str, Any]) -> None:
    seen = silent_host["stopped"]
    assert seen["cancelled"] and seen["ms"] < STOPPED_WITHIN * 1000  # set at 300 ms, mid-hop


def test_a_traceroute_check_that_does_not_reach_its_host_says_why_it_stopped(
    silent_host: dict[str, Any],
) -> None:
    seen = silent_host["traceroute"]
    assert (seen["class"], seen["kind"]) == ("NETWORK_ERROR", "destination_not_reached")
    assert seen["message"] == (
        "destination not reached after 2 hops in a row without a reply (maxUnknownHops): 198.51.100.7 "
        "(TCP probes); no hop answered"
    )
    assert seen["rule"] == "rules-v1/run-destination-not-reached"


def test_a_process_without_either_socket_fails_closed_naming_both_fixes(
    without_sockets: dict[str, Any],
) -> None:
    message = without_sockets["no_socket"]
    assert "may open neither kind of ICMP socket" in message
    assert "gid 65534 is outside net.ipv4.ping_group_range" in message and "CAP_NET_RAW" in message


def test_an_icmp_check_that_may_not_ping_is_a_configuration_error_never_retried(
    without_sockets: dict[str, Any],
) -> None:
    seen = without_sockets
    assert (seen["attempts"], seen["class"], seen["kind"]) == (
        1,
        "CONFIGURATION_ERROR",
        "no_socket_permission",
    )


# --- a world of them, as a user runs it ------------------------------------------------------------------

WORLD = """settings: {speed: 1, analysisDelaySeconds: 0}
accounts:
  - id: 7d3e5c1a-2b4f-4a6e-9c8d-0e1f2a3b4c5d
    name: net
    keys: [{key: tsk_demo_icmp_checks_1234567, role: read-write}]
    checks:
      - {id: i1, name: Loopback ping, checkType: ICMP, tags: [net], request: {hostname: 127.0.0.1,
         pingCount: 2, assertions: [{source: LATENCY, property: avg, comparison: LESS_THAN, target: "50"}]}}
      - {id: t1, name: Loopback path, checkType: TRACEROUTE, tags: [net], request: {url: 127.0.0.1,
         assertions: [{source: HOP_COUNT, comparison: EQUALS, target: "1"}]}}
      - {id: h1, name: Nightly backup, checkType: HEARTBEAT, tags: [net]}
"""


@needs_raw
def test_a_world_of_icmp_traceroute_and_heartbeat_checks_runs_with_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith((*CI_PREFIXES, "TESTSESSION_")) and k != "CI"
    }
    (tmp_path / "world.yml").write_text(WORLD, encoding="utf-8")
    argv = ["run", "--emulator", "--world", "world.yml", "--tag", "net", "--location", "eu-west-1"]
    ran = run_here(argv, {**env, "TESTSESSION_API_KEY": "tsk_demo_icmp_checks_1234567"}, tmp_path)
    assert ran.returncode == 1, ran.stderr  # the heartbeat cannot run here: an error, which fails the gate
    results = json.loads((tmp_path / "testsession-reports" / "results.json").read_text(encoding="utf-8"))
    verdicts = {r["name"]: r["verdict"] for r in results["sessions"][0]["results"]}
    assert verdicts == {"Loopback ping": "passed", "Loopback path": "passed", "Nightly backup": "error"}
    assert "HEARTBEAT checks cannot run locally: a heartbeat monitor is passive" in ran.stdout


def test_an_exported_icmp_check_keeps_its_packet_loss_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Left out, the defaults (10 / 20 %) would pass here a run that production fails at 5 %."""
    from runner.emulator.core.export import export_world
    from runner.emulator.core.world import parse_world_text

    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_export_icmp_1234567")
    definition = {
        "id": "a", "name": "ping", "checkType": "ICMP", "degradedPacketLossThreshold": 2,
        "maxPacketLossThreshold": 5, "request": {"hostname": "127.0.0.1", "pingCount": 20},
    }  # fmt: skip
    exported = export_world([definition], account_id="7d3e5c1a-2b4f-4a6e-9c8d-0e1f2a3b4c5d")
    assert [c.reason for c in exported.checks] == [None]  # runs here
    (check,) = parse_world_text(exported.text).accounts[0].checks
    loaded = check.plan.definition
    assert isinstance(loaded, IcmpCheckDefinition) and loaded.packet_loss_limits() == (2, 5)


@pytest.mark.parametrize("check_type", ["ICMP", "TRACEROUTE"])
def test_should_fail_is_refused_where_production_does_not_say_what_it_does(check_type: str) -> None:
    request = {"hostname": "127.0.0.1"} if check_type == "ICMP" else {"url": "127.0.0.1"}
    attempt = run_check(_check(check_type, request, shouldFail=True), max_run_seconds=30).final
    assert (attempt.error_kind, attempt.message) == (
        FailureKind.INVALID_DEFINITION,
        f"shouldFail: not run here for {check_type} checks (production's docs do not say what it does to "
        "them); leave it out or false",
    )
