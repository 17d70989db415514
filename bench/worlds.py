"""Emulator worlds for the benchmarks: one account, one key, checks of known behaviour and length."""

from __future__ import annotations

from typing import Any

ACCOUNT = "b3c4d5e6-0000-4000-8000-00000000be01"
KEY = "tsk_bench_5e1f0a2b3c4d"
LOCATION = "eu-west-1"


def check(index: int, tag: str, behaviour: str, seconds: float) -> dict[str, Any]:
    return {
        "id": f"bench-{tag}-{index:05d}",
        "name": f"bench {tag} {index}",
        # An API check's run ends at 30 s (production's maximum run time, which the emulator keeps):
        # longer checks are browser checks (240 s), so a 45 s passing check passes.
        "checkType": "API" if seconds <= 30 else "BROWSER",
        "tags": [tag],
        "behaviour": behaviour,
        "durationSeconds": seconds,
        # Every check is its own error group (the emulator groups by check and cleaned message).
        "errorMessage": "expected status 200 but received 500" if behaviour == "fail" else None,
    }


def world(
    checks: list[dict[str, Any]],
    *,
    speed: float = 1.0,
    limit: int = 600,
    window: float = 60.0,
    analysis_delay: float = 2.0,
) -> dict[str, Any]:
    return {
        "settings": {
            "speed": speed,
            "rateLimit": {"limit": limit, "windowSeconds": window},
            "analysisDelaySeconds": analysis_delay,
            "seed": 0,
        },
        "accounts": [
            {
                "id": ACCOUNT,
                "name": "bench",
                "keys": [{"key": KEY, "role": "read-write"}],
                "checks": [{k: v for k, v in c.items() if v is not None} for c in checks],
            }
        ],
    }


def spec_text(tag: str, reports_dir: str, rca: bool, timeout: float = 300) -> str:
    """A target spec for `testsession run`: the checks carrying `tag`, reports in reports_dir."""
    return (
        f"name: bench {tag}\n"
        f"runLocation: {LOCATION}\n"
        f"target:\n  matchTags: [[{tag}]]\n"
        f"wait:\n  timeoutSeconds: {timeout}\n"
        f"rca:\n  enabled: {'true' if rca else 'false'}\n  max: 50\n  timeoutSeconds: 60\n"
        "reports:\n"
        f"  junit: {reports_dir}/junit.xml\n"
        f"  markdown: {reports_dir}/summary.md\n"
        f"  json: {reports_dir}/results.json\n"
    )
