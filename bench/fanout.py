"""Figure 5: root cause analyses of 1,000 error groups under a scaled-down rate limit.

What is measured: runner.job.analyses.GroupReader.finish(session, wait=True), the code `testsession run`
uses when a session has ended (it reads the groups not read yet, starts their analyses and waits for
them), over a real session of the emulator with N failing checks (each its own error group), through
an ApiClient whose RateLimiter has the emulator's limit. Three bench-side settings differ from a
`testsession run`: MAX_GROUPS_READ (200 in the runner) and rca.max are raised to N, since the runner
itself reads at most 200 groups, and READS_WAIT (15 s) to the analyses' timeout, since N reads at the
limit take longer than 15 s. analysisDelaySeconds is 0, so every group costs
exactly 3 requests (read the group, create the analysis, read it) and no pending polls.

The rate limit is a sliding window: at most L requests in any W seconds. Request i (from 0) can then
be sent no earlier than floor(i / L) * W after the first, so R requests need at least
floor((R - 1) / L) * W (= (R - L) / L * W when L divides R). The reader's time is compared with
that bound; the 429 answers are the emulator's count.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import worlds
from common import Row

TARGET_RATIO = 1.1
LIMIT = 100  # requests per WINDOW: 100/s, about a quarter of what this machine serves unlimited
WINDOW = 1.0


def measure(groups: int) -> list[Row]:
    import runner.job.analyses as analyses
    from runner.client import ApiClient, RateLimiter
    from runner.emulator import Emulator
    from runner.job.events import Where
    from runner.models import Target, TriggerRequest

    checks = [worlds.check(i, "fanout", "fail", 0.5) for i in range(groups)]
    world = worlds.world(checks, limit=LIMIT, window=WINDOW, analysis_delay=0.0)
    with (
        Emulator(world) as emulator,
        ApiClient(
            emulator.url,
            emulator.api_key,
            emulator.account_id,
            rate_limiter=RateLimiter(LIMIT, WINDOW),
            read_timeout=60,
        ) as client,
    ):
        request = TriggerRequest(
            name="bench fan-out", runLocation=worlds.LOCATION, target=Target(matchTags=[["fanout"]])
        )
        session = client.await_completion(client.trigger(request).testSessionId, max_wait_seconds=30)
        if session is None or len(session.errorGroupIds) != groups:
            raise SystemExit("bench: the fan-out session did not end with one error group per check")
        time.sleep(WINDOW + 0.05)  # an empty window on both sides, so the bound starts from zero
        before = emulator.backend.stats()
        analyses.MAX_GROUPS_READ = groups
        analyses.READS_WAIT = 600.0
        plan = analyses.AnalysisPlan(max_groups=groups, timeout_seconds=600)
        where = Where(name="bench fan-out", location=worlds.LOCATION)
        reader = analyses.GroupReader(client, plan, where, lambda _event: None, threading.Event())
        started = time.monotonic()
        outcomes = reader.finish(session, wait=True)
        elapsed = time.monotonic() - started
        time.sleep(0.2)  # the emulator counts a request after its answer is sent
        after = emulator.backend.stats()
    sent = after["requestsTotal"] - before["requestsTotal"]
    limited = after["rateLimited"] - before["rateLimited"]
    answered = sent - limited
    bound = ((answered - 1) // LIMIT) * WINDOW
    ratio = elapsed / bound if bound else float("inf")
    states = Counter(o.analysis.state for o in outcomes if o.analysis)
    return [
        Row(
            f"analyses fan-out: {groups:,} error groups, limit {LIMIT} per {WINDOW:g} s",
            f"{elapsed:.2f} s = {ratio:.3f} x bound {bound:.0f} s; {limited} x 429",
            f"<= {TARGET_RATIO} x bound, 0 x 429",
            ratio <= TARGET_RATIO and limited == 0,
            f"{answered} requests answered ({answered / groups:.2f} per group); "
            f"analyses: {', '.join(f'{n} {s}' for s, n in sorted(states.items()))}; "
            "GroupReader.finish measured directly (MAX_GROUPS_READ, READS_WAIT and rca.max raised)",
        )
    ]
