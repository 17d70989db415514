"""Figure 1: start-up of `testsession --version` and `--help`, side by side with the service's own CLI.

`python bench/startup.py [--runs N]` measures this figure alone; `bench/run.py` includes it.

testsession runs from a plain virtual environment (bench/.startup-venv, gitignored) that finds the
package and its dependencies through path entries, as a wheel install does: a development venv's
editable install adds an import finder to every Python start there (about 20 ms here), which users'
installs do not have. The service's CLI is the npm package `checkly`, installed with npm from the
registry into bench/.npm (gitignored) on first use; without npm or the package, our figures stand alone.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from common import MIB, REPO, Row, clean_env, median, run_child

TARGET_SECONDS = 0.1
TARGET_MIB = 40.0
# testsession --version against the service's CLI: the goal, and what we aim for.
GOAL_RATIO, AIM_RATIO = 1 / 6, 1 / 8
# Heavy modules that --version and --help must not import (they load only when a command needs them).
HEAVY = ("pydantic", "requests", "yaml", "git", "fastapi", "uvicorn", "starlette")
BENCH = Path(__file__).resolve().parent
USER_VENV = BENCH / ".startup-venv"
NPM_PREFIX = BENCH / ".npm"
PEER = "checkly"  # the monitoring service's own CLI (npm)


def user_install() -> tuple[str, str]:
    """(python, testsession) of a plain venv that imports this checkout as an installed package would.

    The console script is the one pip wrote for this interpreter, with its first line pointing at the
    plain venv's Python; the package and its dependencies come from two path entries (a .pth file)."""
    venv.EnvBuilder(clear=True, with_pip=False, symlinks=True).create(USER_VENV)
    python = USER_VENV / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "testsession-bench.pth").write_text(
        f"{REPO}\n{sysconfig.get_path('purelib')}\n", encoding="utf-8"
    )
    ours = Path(sysconfig.get_path("scripts")) / "testsession"
    if not ours.exists():
        raise SystemExit("bench: the testsession command is not installed here (pip install -e .)")
    body = ours.read_text(encoding="utf-8").split("\n", 1)[1]
    script = USER_VENV / "bin" / "testsession"
    script.write_text(f"#!{python}\n{body}", encoding="utf-8")
    script.chmod(0o755)
    return str(python), str(script)


def peer_cli() -> tuple[str | None, str]:
    """The service's CLI: (path, version) or (None, why not), installed on first use."""
    path = NPM_PREFIX / "node_modules" / ".bin" / PEER
    if not path.exists():
        npm = shutil.which("npm")
        if not npm or not shutil.which("node"):
            return None, "npm or node is not installed"
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", "--silent", PEER],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return None, f"npm install {PEER} took over 10 minutes"
        if done.returncode != 0 or not path.exists():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
            return None, f"npm install {PEER} failed: {last}"
    child = run_child([str(path), "--version"], env=clean_env())
    if child.code != 0:
        return None, f"{PEER} --version exited {child.code}"
    return str(path), child.stdout.strip().splitlines()[0]


def heavy_imports(python: str, script: str, flag: str) -> list[str]:
    """Heavy top-level packages imported by `testsession FLAG`, read from -X importtime."""
    child = run_child([python, "-X", "importtime", script, flag], env=clean_env())
    found = set()
    for line in child.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        name = line.rsplit("|", 1)[-1].strip()
        if name.split(".")[0] in HEAVY:
            found.add(name.split(".")[0])
    return sorted(found)


def measure(runs: int) -> list[Row]:
    python, script = user_install()
    peer, peer_version = peer_cli()
    env = clean_env()
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "testsession --version": [script, "--version"],
        "testsession --help": [script, "--help"],
    }
    if peer:
        commands[f"{PEER} --version"] = [peer, "--version"]
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
            note=f"median of {runs}, interleaved with the commands below; a plain venv (bench/startup.py)",
        )
    ]
    for name in ("testsession --version", "testsession --help"):
        wall, peak = median(walls[name]), median(peaks[name])
        heavy = heavy_imports(python, script, name.split()[-1])
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
    ours = median(walls["testsession --version"])
    if not peer:
        rows.append(Row(f"start-up: the service's CLI ({PEER} --version)", "not measured", note=peer_version))
        return rows
    theirs = median(walls[f"{PEER} --version"])
    ratio = ours / theirs
    rows.append(
        Row(
            f"start-up: the service's CLI ({PEER} --version)",
            f"{theirs:.3f} s, {median(peaks[f'{PEER} --version']):.0f} MiB",
            note=f"{peer_version}, from npm; median of {runs}, interleaved with ours",
        )
    )
    rows.append(
        Row(
            f"start-up: testsession --version / {PEER} --version",
            f"{ratio:.3f} (1/{1 / ratio:.1f})",
            f"<= 1/{1 / GOAL_RATIO:.0f} (aim 1/{1 / AIM_RATIO:.0f})",
            ratio <= GOAL_RATIO,
            f"{ours:.3f} s against {theirs:.3f} s; the aim of 1/{1 / AIM_RATIO:.0f}: "
            + ("met" if ratio <= AIM_RATIO else "not met"),
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/startup.py", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="measured runs of each command (default 9)")
    rows = measure(parser.parse_args(argv).runs)
    for row in rows:
        target = f" (target {row.target}: {row.verdict})" if row.ok is not None else ""
        print(f"{row.figure}: {row.measured}{target}")
        if row.note:
            print(f"    {row.note}")
    return 1 if any(row.ok is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
