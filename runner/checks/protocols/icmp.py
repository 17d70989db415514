"""ICMP checks: `pingCount` echo requests to `hostname`, judged by packet loss and the assertions.

Production's rules (icmp-monitors/overview.mdx and configuration.mdx, constructs/icmp-monitor.mdx):
- The host name is resolved in `ipFamily` (IPv4 by default); then `pingCount` pings (default 10), one
  every 500 ms; each reply is waited for up to 2 s (ours) and never past the attempt's bound.
- Packet loss at or above `maxPacketLossThreshold` % (default 20) fails the run, at or above
  `degradedPacketLossThreshold` % (default 10) degrades it ("the percentage at which the monitor is
  marked as ..."). No response-time limits (ChecksV1IcmpMonitor has none).
- LATENCY reads avg, min, max or stdDev of the round trips in ms; JSON_RESPONSE a JSONPath into the
  documented response (pinging.py `PingRun.as_json`).
Ours, where production is silent:
- No reply at all is a NETWORK_ERROR (`no_reply`: retried by onlyOn NETWORK_ERROR, analysed as an
  unreachable or silent host), and so are replies that are all ICMP errors (`host_unreachable`,
  naming the router that answered). Some loss at or above the limit is `packet_loss`, a failed
  expectation on an answer that came (ASSERTION_FAILURE), judged after the assertions like a 4xx.
- No ICMP socket may be opened (icmp_sockets.py): CONFIGURATION_ERROR `no_socket_permission`,
  naming the sysctl and the capability; nothing was sent.
- `{{VARIABLES}}` in `hostname`, as in TCP's (socket_fields.py).
- The attempt's response time is the average round trip (the run's whole time when none came back).
"""

from __future__ import annotations

from runner.checks.assertions import ByProperty
from runner.checks.failures import Failure, FailureKind, NotRun
from runner.checks.outcome import RequestSummary, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.pinging import PingRun, ping
from runner.checks.variables import Substitution
from runner.models.check_definitions import ICMP_INTERVAL_S, ICMP_REPLY_TIMEOUT_S, IcmpCheckDefinition


class IcmpProtocol(CheckProtocol[IcmpCheckDefinition]):
    def fill(self, check: IcmpCheckDefinition, subst: Substitution) -> IcmpCheckDefinition:
        hostname = check.request.hostname
        if "{{" not in hostname:
            return check
        filled = subst.render(hostname, "request.hostname", encode=False).strip()
        return check.model_copy(update={"request": check.request.model_copy(update={"hostname": filled})})

    def perform(self, check: IcmpCheckDefinition, job: Job) -> Observation:
        r = check.request
        run = ping(r.hostname, r.ipFamily, r.pingCount, deadline=job.bounds.deadline, stop=job.stop,
                   interval=ICMP_INTERVAL_S, reply_timeout=ICMP_REPLY_TIMEOUT_S)  # fmt: skip
        if run.no_socket:
            message = f"ICMP checks cannot ping from here: {run.no_socket}"
            raise NotRun(FailureKind.NO_SOCKET_PERMISSION, message)
        latency = run.latency()
        degraded, loss = loss_verdict(check, run)
        return Observation(
            request=summary(check, run),
            timing=TimingPhases(dns_ms=run.dns_ms, connect_ms=None, tls_ms=None, first_byte_ms=None,
                                download_ms=None, total_ms=latency["avg"] if latency else run.elapsed_ms),
            failure=_failure(check, run, job),
            cancelled=run.cancelled,
            excerpt=transcript(run),
            values={"LATENCY": ByProperty(latency or {}), "JSON_RESPONSE": run.as_json()},
            implicit=loss,
            degraded=degraded,
        )  # fmt: skip


PROTOCOL = IcmpProtocol()


def summary(check: IcmpCheckDefinition, run: PingRun | None = None) -> RequestSummary:
    r = check.request
    address = run.resolved_ip if run else None
    target = f"{r.hostname} ({r.pingCount} pings, {r.ipFamily})"
    return RequestSummary(kind="ICMP", method="PING", target=target, remote_address=address)


def transcript(run: PingRun) -> str:
    """ping's summary first (`10 packets transmitted, 9 received, 10% packet loss, round-trip
    min/avg/max/stddev = ... ms`: what a one-line quote keeps), then one line per ping."""
    head = (
        f"{run.packets_sent} packets transmitted, {run.packets_received} received, "
        f"{run.packet_loss:g}% packet loss"
    )
    latency = run.latency()
    if latency:
        head += (
            ", round-trip min/avg/max/stddev = "
            + "/".join(f"{latency[k]:.3f}" for k in ("min", "avg", "max", "stdDev"))
            + " ms"
        )
    mode = run.mode.value if run.mode else "no socket"
    lines = [head, f"PING {run.hostname} ({run.resolved_ip or 'not resolved'}) over a {mode}"]
    for reply in run.replies:
        what = f"time={reply.rtt_ms:.3f} ms" if reply.success else (reply.error or "no reply")
        lines.append(f"icmp_seq={reply.sequence} {what}")
    return "\n".join(lines)


def _failure(check: IcmpCheckDefinition, run: PingRun, job: Job) -> Failure | None:
    host = check.request.hostname
    where = f"{host} ({run.resolved_ip})" if run.resolved_ip and run.resolved_ip != host else host
    if run.lookup_failed:
        return Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: {host} ({check.request.ipFamily})")
    if run.timed_out:
        message = f"timeout: the pings did not end within {job.bounds.text}: {where}"
        return Failure(FailureKind.TIMEOUT, message)
    if run.packets_received:
        return None
    if not run.packets_sent:
        reason = run.send_error or "nothing could be sent"
        return Failure(FailureKind.NETWORK, f"ping failed ({reason}): {where}")
    errors = run.errors()
    if errors:
        return Failure(FailureKind.HOST_UNREACHABLE,
                       f"no echo reply, {errors[0]}: {where} ({run.packets_sent} sent)")  # fmt: skip
    waited = f"{ICMP_REPLY_TIMEOUT_S:g} s"
    return Failure(FailureKind.NO_REPLY,
                   f"no echo reply to {run.packets_sent} pings within {waited} each: {where}")  # fmt: skip


def loss_verdict(check: IcmpCheckDefinition, run: PingRun) -> tuple[str | None, Failure | None]:
    """(why it is degraded, the failure) by packet loss: at or above maxPacketLossThreshold a failure
    (when some replies came; none at all is `no_reply`), at or above degradedPacketLossThreshold
    degraded, saying so."""
    degraded_at, failed_at = check.packet_loss_limits()
    if not run.packets_received:
        return None, None
    if run.packet_loss < failed_at:
        if run.packet_loss < degraded_at:
            return None, None
        return (
            f"packet loss {run.packet_loss:g}% reached the degradedPacketLossThreshold of {degraded_at:g}%: "
            f"{run.packets_received} of {run.packets_sent} pings answered by {run.resolved_ip}"
        ), None
    message = (
        f"packet loss {run.packet_loss:g}% reached the maxPacketLossThreshold of {failed_at:g}%: "
        f"{run.packets_received} of {run.packets_sent} pings answered by {run.resolved_ip}"
    )
    return None, Failure(FailureKind.PACKET_LOSS, message, network=False)
