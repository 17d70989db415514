"""TRACEROUTE checks: the route to `url` hop by hop (tracing.py), judged like production.

Production's rules (traceroute-monitors/configuration.mdx, overview.mdx, constructs/traceroute-monitor.mdx):
- The destination not reached fails the run "regardless of" the response-time limits (ours: a
  NETWORK_ERROR, `destination_not_reached`, naming why the trace stopped and the last hop that answered).
- degradedResponseTime and maxResponseTime (10000 / 20000 ms) apply to the final hop's average RTT,
  not to the trace's time: that RTT is the attempt's response time here.
- RESPONSE_TIME reads the final hop's avg, min, max or stdDev (default avg; it fails when the
  destination was not reached, as production's does); HOP_COUNT the hops recorded; PACKET_LOSS the
  loss at the last recorded hop.
- The trace runs for at most `timeout` seconds (1-30, default 10), then PTR lookups for at most 1 s.
Ours: an SCTP probe, or a machine where no raw socket may be opened, fails closed (CONFIGURATION_ERROR)
saying why; `{{VARIABLES}}` in `url` as in a TCP check's hostname.
"""

from __future__ import annotations

import dataclasses

from runner.checks.assertions import ByProperty
from runner.checks.failures import Failure, FailureKind, NotRun
from runner.checks.outcome import RequestSummary, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.sockets import Stopped
from runner.checks.protocols.tracing import Trace, trace, with_names
from runner.checks.variables import Substitution
from runner.models.check_definitions import TracerouteCheckDefinition


class TracerouteProtocol(CheckProtocol[TracerouteCheckDefinition]):
    def fill(self, check: TracerouteCheckDefinition, subst: Substitution) -> TracerouteCheckDefinition:
        url = check.request.url
        if "{{" not in url:
            return check
        filled = subst.render(url, "request.url", encode=False).strip()
        return check.model_copy(update={"request": check.request.model_copy(update={"url": filled})})

    def perform(self, check: TracerouteCheckDefinition, job: Job) -> Observation:
        r = check.request
        # The trace's own timeout; the attempt's bound leaves room after it for the PTR lookups.
        until = min(job.bounds.deadline, job.bounds.deadline - job.bounds.seconds + r.timeout)
        result = trace(r.url, protocol=r.protocol, port=r.port_number, ip_family=r.ipFamily,
                       max_hops=r.maxHops, max_unknown_hops=r.maxUnknownHops, ptr_lookup=False,
                       deadline=until, stop=job.stop)  # fmt: skip
        if result.cannot_probe:
            sctp = r.protocol == "SCTP"
            kind = FailureKind.NOT_RUNNABLE_LOCALLY if sctp else FailureKind.NO_SOCKET_PERMISSION
            raise NotRun(kind, f"TRACEROUTE checks cannot trace from here: {result.cannot_probe}")
        if r.ptrLookup and result.hops and not result.cancelled:
            try:
                result = with_names(result, job.bounds.deadline, job.stop)
            except Stopped:
                result = dataclasses.replace(result, cancelled=True)
        latency = result.final_latency()
        return Observation(
            request=summary(check, result),
            timing=TimingPhases(dns_ms=None, connect_ms=None, tls_ms=None, first_byte_ms=None,
                                download_ms=None, total_ms=latency["avg"] if latency else result.elapsed_ms),
            failure=_failure(check, result),
            cancelled=result.cancelled,
            excerpt=transcript(result),
            values={
                "RESPONSE_TIME": ByProperty(latency or {}, default="avg"),
                "HOP_COUNT": len(result.hops),
                "PACKET_LOSS": result.last_hop_loss,
            },
        )  # fmt: skip


PROTOCOL = TracerouteProtocol()


def summary(check: TracerouteCheckDefinition, result: Trace | None = None) -> RequestSummary:
    r = check.request
    port = "" if r.protocol == "ICMP" else f" port {r.port_number}"
    return RequestSummary(kind="TRACEROUTE", method=r.protocol, target=f"{r.url}{port}",
                          remote_address=result.resolved_ip if result else None)  # fmt: skip


def transcript(result: Trace) -> str:
    """Why it stopped first (what a one-line quote keeps), then traceroute's lines: `1  localhost
    (127.0.0.1)  0.2 ms, 0% loss`, `2  *`."""
    reached = "destination reached" if result.reached else "destination not reached"
    hops = f"{len(result.hops)} hop{'' if len(result.hops) == 1 else 's'}"
    lines = [f"{hops}, {reached} ({result.truncation or 'error'}); traceroute to "
             f"{result.hostname} ({result.resolved_ip or 'not resolved'}), {result.max_hops} hops max, "
             f"{result.protocol} probes"]  # fmt: skip
    for hop in result.hops:
        latency = hop.latency()
        if hop.address is None or latency is None:
            lines.append(f"{hop.number}  *")
            continue
        name = f"{hop.host} ({hop.address})" if hop.host else hop.address
        lines.append(f"{hop.number}  {name}  {latency['avg']:.3f} ms, {hop.loss:g}% loss")
    return "\n".join(lines)


_WHY = {
    "maxHops": "after maxHops ({hops}) hops",
    "maxUnknownHops": "after {unknown} hops in a row without a reply (maxUnknownHops)",
    "timeout": "within the trace's timeout of {timeout} s",
}


def _failure(check: TracerouteCheckDefinition, result: Trace) -> Failure | None:
    r = check.request
    where = f"{r.url} ({result.resolved_ip})" if result.resolved_ip and result.resolved_ip != r.url else r.url
    if result.lookup_failed:
        return Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: {r.url} ({r.ipFamily})")
    if result.send_error:
        return Failure(FailureKind.NETWORK, f"traceroute failed ({result.send_error}): {where}")
    if result.reached or result.cancelled:
        return None
    why = _WHY.get(result.truncation or "", "")
    why = why.format(hops=r.maxHops, unknown=r.maxUnknownHops, timeout=r.timeout)
    last = result.final_hop
    seen = f"; the last hop that answered: {last.number} {last.address}" if last else "; no hop answered"
    return Failure(FailureKind.DESTINATION_NOT_REACHED,
                   f"destination not reached {why}: {where} ({r.protocol} probes){seen}")  # fmt: skip
