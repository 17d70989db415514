"""Figure 1: start-up of `testsession --version` and `--help` against `python -c pass`, interleaved."""

from __future__ import annotations

from common import MIB, Row, clean_env, console_script, median, python, run_child

TARGET_SECONDS = 0.1
TARGET_MIB = 40.0
# Heavy modules that --version and --help must not import (they load only when a command needs them).
HEAVY = ("pydantic", "requests", "yaml", "git", "fastapi", "uvicorn", "starlette", "junit_xml")


def heavy_imports(script: str, flag: str) -> list[str]:
    """Heavy top-level packages imported by `testsession FLAG`, read from -X importtime."""
    child = run_child([python(), "-X", "importtime", script, flag], env=clean_env())
    found = set()
    for line in child.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        name = line.rsplit("|", 1)[-1].strip()
        if name.split(".")[0] in HEAVY:
            found.add(name.split(".")[0])
    return sorted(found)


def measure(runs: int) -> list[Row]:
    script = console_script()
    env = clean_env()
    commands = {
        "python -c pass": [python(), "-c", "pass"],
        "testsession --version": [script, "--version"],
        "testsession --help": [script, "--help"],
    }
    for argv in commands.values():  # warm the page cache and .pyc files; not counted
        run_child(argv, env=env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        # Interleaved: a slow moment of the machine hits every command alike.
        for name, argv in commands.items():
            child = run_child(argv, env=env)
            if child.code != 0:
                raise SystemExit(f"bench: {name} exited {child.code}: {child.stderr.strip()[:300]}")
            walls[name].append(child.wall)
            peaks[name].append(child.maxrss_kib * 1024 / MIB)
    base_wall, base_peak = median(walls["python -c pass"]), median(peaks["python -c pass"])
    rows = [
        Row(
            "start-up: python -c pass (baseline)",
            f"{base_wall:.3f} s, {base_peak:.1f} MiB",
            note=f"median of {runs}, interleaved with the commands below",
        )
    ]
    for name in ("testsession --version", "testsession --help"):
        wall, peak = median(walls[name]), median(peaks[name])
        heavy = heavy_imports(script, name.split()[-1])
        note = f"+{wall - base_wall:.3f} s, +{peak - base_peak:.1f} MiB over python -c pass; "
        note += f"heavy imports: {', '.join(heavy) if heavy else 'none'}"
        rows.append(
            Row(
                f"start-up: {name}",
                f"{wall:.3f} s, {peak:.1f} MiB",
                f"<= {TARGET_SECONDS} s, <= {TARGET_MIB:.0f} MiB",
                wall <= TARGET_SECONDS and peak <= TARGET_MIB and not heavy,
                note,
            )
        )
    return rows
