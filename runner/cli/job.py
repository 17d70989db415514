"""The glue of `run` and `wait`: settings, emulator, signals, the Runner, then reports and front ends.

Imported only when one of those commands runs. `JobSettings` is built once from argparse, the spec
and the environment; everything after gets what it needs at construction.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext, suppress
from pathlib import Path
from types import FrameType, MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple, TextIO

from runner.ci import CiPublisher
from runner.ci.console import NORMAL, QUIET, VERBOSE, Console
from runner.cli.common import (
    ENV_ACCOUNT_ID,
    ENV_API_KEY,
    ENV_EMULATOR_STATE,
    Connection,
    handle_signals,
    stop_at_once,
)
from runner.core import memory
from runner.core.errors import SpecError, UsageError
from runner.core.exitcodes import ExitCode
from runner.core.redact import Redactor, redact_data
from runner.job.analyses import AnalysisPlan
from runner.job.digest import DEMO_MARK, digest
from runner.job.events import EventQueue, Finished, Note, Observer, Observers
from runner.job.outcome import Outcome, ResultOutcome
from runner.job.plan import SessionPlan
from runner.job.policy import Gate
from runner.job.run import Runner
from runner.metadata import resolve_metadata
from runner.models import SessionMetadata, TriggerRequest
from runner.reports.files import check_writable
from runner.spec import RunSpec

if TYPE_CHECKING:
    # The baseline, the build and the shard are imported where a run has one (--baseline,
    # build:/--build-command, --shard): most runs have none, and their modules (a dozen frozen
    # dataclasses, subprocess) were ~4% of a one-check run's start-up.
    from runner.checks.checksfile import ChecksFile
    from runner.client import ApiClient  # imported where the run has a service: a checks file's has none
    from runner.emulator import Emulator
    from runner.emulator.core.answers import LocalService
    from runner.emulator.core.world import World
    from runner.job.baseline import Baseline, BaselineWarning
    from runner.job.build import BuildPlan
    from runner.job.quarantine import Quarantine
    from runner.job.shard import Shard, ShardPlan
    from runner.job.source import ResultSource
    from runner.state.store import CheckRun

STDOUT = "-"  # a report path that means standard output


class JobSettings(NamedTuple):
    """Everything `run` and `wait` need, decided once (a value: a NamedTuple is cheap to create on
    the start-up path, a frozen dataclass of 15 fields is not)."""

    spec: RunSpec
    plan: SessionPlan
    connection: Connection
    report_paths: Mapping[str, Path | str] = MappingProxyType({})
    detach: bool = False
    # The emulator runs the sessions: --emulator, --demo, --world (a checks file's run has no
    # emulator: it runs without an account too, see `source` and `no_account`).
    emulator: bool = False
    world: str | None = None
    checks: ChecksFile | None = None  # --checks FILE (or the spec's checks:): the user's own checks
    source: Literal["demo", "world", "checks"] | None = None  # without an account: what runs
    state: str | None = None  # the state file (--state): a local run's or the emulator's
    verbosity: int = NORMAL
    secret_keys: tuple[str, ...] = ()
    spec_path: str | None = None  # names the sticky comment of this spec
    build_plan: BuildPlan | None = None  # the build started and awaited before the checks (`run` only)
    shard: Shard | None = None  # --shard i/n: this job runs part i of the matched checks
    workers: int | None = None  # TESTSESSION_WORKERS: a checks file's worker processes (job/workers.py)

    @classmethod
    def build(
        cls, args: argparse.Namespace, spec: RunSpec, environ: Mapping[str, str] | None = None
    ) -> JobSettings:
        environ = os.environ if environ is None else environ
        rca = spec.rca
        emulator = bool(getattr(args, "emulator", False))
        world = getattr(args, "world", None)
        checks = _checks_file(args, spec, environ)
        demo = bool(getattr(args, "demo", False))
        if checks is not None and (world or demo):
            raise UsageError(f"{'--world' if world else '--demo'} with --checks: give one of them")
        if demo and world:
            raise UsageError("--demo with --world: the demo is the shipped world; give one of them")
        emulator = emulator or demo
        no_account = emulator or checks is not None
        if world and not emulator:
            raise UsageError("--world needs --emulator")
        build = _build_plan(spec, environ)
        if build is not None and getattr(args, "detach", False):
            # The build started here stops when this command exits: the session would check nothing.
            raise UsageError(
                "--detach with a build (build: or --build-command/--build-url): the build is stopped "
                "when this command exits, before the detached session's checks could reach it; "
                "start the build in an earlier step and drop build, or run without --detach"
            )
        source: Literal["demo", "world", "checks"] | None = None
        if no_account:
            source = "checks" if checks is not None else "world" if world else "demo"
        if source == "demo" and not demo and _in_ci(environ):
            # A CI job gates a build: scripted demo results must never pass for the build's.
            raise UsageError(
                "--emulator without --checks or --world runs the shipped demo world, whose results are "
                "scripted, not your build's: give --checks FILE to run your checks against the build "
                "(or --world FILE), or --demo if the demo is what this job means to run"
            )
        if checks is not None and getattr(args, "detach", False):
            raise UsageError(
                "--detach with --checks: the checks run in this process and stop when this command "
                "exits, so nothing would run detached; run without --detach"
            )
        if emulator and getattr(args, "detach", False):
            # The in-process emulator stops when this command exits: the id would lead nowhere.
            raise UsageError(
                "--detach with --emulator: the emulator started here stops when this command exits, "
                "so the session could never be waited for; start `testsession emulator` in another "
                "terminal, export what it prints, and run with --detach and without --emulator"
            )
        state = getattr(args, "state", None)
        if state is not None and not no_account:
            raise UsageError("--state needs --emulator or --checks FILE: it keeps a local run's history")
        if state == "":
            raise UsageError("--state: give the state file's path")
        if state is None and no_account:
            state = environ.get(ENV_EMULATOR_STATE) or None
        shard = None
        if spec.shard is not None and hasattr(args, "shard"):  # `run` only: `wait` triggers nothing
            from runner.job.shard import parse_shard

            shard = parse_shard(spec.shard.part, environ, "--shard/shard.part")
        verbosity = VERBOSE if args.verbose else QUIET if getattr(args, "quiet", False) else NORMAL
        return cls(
            spec=spec,
            plan=SessionPlan(
                timeout_seconds=spec.wait.timeoutSeconds,
                analyses=AnalysisPlan(
                    enabled=rca.enabled,
                    generate=rca.generate,
                    timeout_seconds=rca.timeoutSeconds,
                    max_groups=rca.max,
                    context=rca.context,
                ),
                gate=Gate(
                    fail_on_degraded=spec.gate.failOnDegraded,
                    fail_on_no_match=spec.gate.failOnNoMatchingChecks,
                    fail_on=spec.gate.failOn,
                ),
            ),
            connection=_connection(args),
            report_paths=_report_paths(spec, getattr(args, "spec", None)),
            detach=bool(getattr(args, "detach", False)),
            emulator=emulator,
            world=world,
            checks=checks,
            source=source,
            state=state,
            verbosity=verbosity,
            secret_keys=tuple(getattr(args, "secret_env", None) or ()),
            spec_path=getattr(args, "spec", None),
            build_plan=build,
            shard=shard,
            workers=_workers(environ) if checks is not None else None,
        )

    @property
    def no_account(self) -> bool:
        """The run needs no account: a checks file's checks run here, or the emulator serves a world."""
        return self.source is not None

    def retry_budget(self) -> float:
        """Seconds after the start past which no retry begins: the run's deadlines plus a margin."""
        analyses = self.plan.analyses.timeout_seconds if self.plan.analyses.enabled else 0.0
        return self.plan.timeout_seconds + analyses + 30.0


def _workers(environ: Mapping[str, str]) -> int | None:
    from runner.job.workers import parse_workers

    return parse_workers(environ)


def _build_plan(spec: RunSpec, environ: Mapping[str, str]) -> BuildPlan | None:
    if spec.build is None:
        return None
    from runner.job.build import BuildPlan

    # The tool's own credentials stay with the tool: the API key and the comment's tokens.
    hidden = (ENV_API_KEY, spec.comment.gitlabTokenVariable, "GITHUB_TOKEN")
    # Playwright's reuseExistingServer: !process.env.CI, unless the user said otherwise.
    reuse = spec.build.reuseExisting
    return BuildPlan(
        url=spec.build.url,
        command=spec.build.command,
        timeout_seconds=spec.build.timeoutSeconds,
        hidden_env=hidden,
        reuse_existing=reuse if reuse is not None else not _in_ci(environ),
    )


def _remove_leftovers(local: bool) -> None:
    """What a run that was killed (with its watchdog) left: its folder in TMPDIR and, for a run that
    runs checks here, its `.run-*` fragments beside the browser checks' files (core/supervise.py)."""
    from runner.core import supervise

    supervise.remove_stale()
    if local:
        from runner.checks.artifacts import artifacts_dir
        from runner.core.files import PlantedLink, refuse_linked_reports_folder

        folder = artifacts_dir()
        with suppress(PlantedLink):  # testsession-reports a planted link: nothing removed through it
            refuse_linked_reports_folder(folder)
            supervise.remove_stale_fragments(folder)


def _in_ci(environ: Mapping[str, str]) -> bool:
    """A CI job, as GitHub Actions, GitLab CI and most others say it (CI=true)."""
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _checks_file(args: argparse.Namespace, spec: RunSpec, environ: Mapping[str, str]) -> ChecksFile | None:
    """The checks file of --checks, else of the spec's `checks:` (relative to the spec's folder)."""
    path = getattr(args, "checks", None)
    if not path and spec.checks:
        spec_path = getattr(args, "spec", None)
        base = Path(spec_path).parent if spec_path else Path()
        path = str(base / spec.checks)
    if not path:
        return None
    from runner.checks.checksfile import load_checks_file
    from runner.checks.declared import WorldError

    try:
        from runner.checkly import is_project

        if is_project(path):  # a Checkly project: its own checkly package makes it a checks file
            return _checkly_project(path, spec, environ)
        return load_checks_file(path, environ)
    except WorldError as exc:
        raise SpecError(exc.problems) from None


def _checkly_project(path: str, spec: RunSpec, environ: Mapping[str, str]) -> ChecksFile:
    """The project's checks as a checks file: the session's variables (--env, --secret-env, the
    spec's) reach the project's parse too, where checkly.config.ts may read process.env."""
    from runner.checkly import load_project
    from runner.checks.checksfile import parse_checks
    from runner.checks.declared import escape_document

    variables = {
        v.key: v.value for session in spec.sessions for v in session.environmentVariables or [] if v.value
    }
    # The parse sees the job's environment (a construct's process.env.PORT), as `npx checkly` would,
    # without the tool's credentials (synth.parse_environment withholds TESTSESSION_* and CI tokens).
    hidden = (ENV_API_KEY, spec.comment.gitlabTokenVariable)
    project = load_project(path, variables, environ=environ, hidden=hidden)
    for line in (*project.warnings, *project.left_out):
        print(line, file=sys.stderr, flush=True)
    # The project's text holds no ${VAR} of ours (a script's `${token}` is JavaScript, kept as written).
    data = escape_document({"checks": list(project.checks), "variables": []})
    return parse_checks(data, path, environ, project=True)


def _connection(args: argparse.Namespace) -> Connection:
    connection = Connection.from_args(args)
    if hasattr(args, "emulator"):  # `run` (wait has no --emulator: its hint stays the emulator command)
        connection.hint = "or use `run --emulator`"
    return connection


def _report_paths(spec: RunSpec, spec_path: str | None = None) -> dict[str, Path | str]:
    paths: dict[str, Path | str] = {}
    for kind in ("json", "junit", "markdown"):
        value = getattr(spec.reports, kind)
        if not value:
            continue
        if value == STDOUT:
            paths[kind] = STDOUT
            continue
        path = Path(value)
        try:
            is_dir = path.is_dir()
        except OSError as exc:  # a name too long for the file system, ...
            raise UsageError(f"reports.{kind}: {value[:200]!r} cannot be used: {exc.strerror}") from None
        if is_dir:
            raise UsageError(f"reports.{kind}: {value} is a directory; give a file path")
        paths[kind] = path
    if sum(1 for p in paths.values() if p == STDOUT) > 1:
        raise UsageError("only one report can go to standard output ('-')")
    # One file, one output: a second report (or the spec itself) written over the first is lost.
    taken: dict[str, str] = {os.path.realpath(spec_path): "the spec"} if spec_path else {}
    for kind, where in paths.items():
        if isinstance(where, Path):
            real = os.path.realpath(where)
            if real in taken:
                raise UsageError(
                    f"reports.{kind}: {where} is the same file as {taken[real]}; give each its own path"
                )
            taken[real] = f"reports.{kind}"
    return paths


class Job:
    def __init__(
        self,
        settings: JobSettings,
        redact: Redactor,
        environ: Mapping[str, str] | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.settings = settings
        self._runner: Runner | None = None  # set once the run has something to cancel
        self._ran = False  # the run is over: only its reports are left to write
        self.environ = os.environ if environ is None else environ
        self.redact = redact
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        for key in settings.secret_keys:
            redact.add(self.environ.get(key))
        for session in settings.spec.sessions:
            for value in session.secret_values():
                redact.add(value)
        # stdout belongs to the machine-readable answer when there is one: `--detach` prints
        # `ID LINK` lines, `--json -` the results; the console then writes to stderr.
        to_stdout = settings.detach or STDOUT in settings.report_paths.values()
        self.console = Console(
            stream=self.stderr if to_stdout else self.stdout,
            environ=self.environ,
            redactor=redact,
            verbosity=settings.verbosity,
            gate=settings.plan.gate,
            errors=self.stderr,
        )
        self.console.show_links = settings.source is None
        # GitHub must learn the secrets before anything else is printed.
        self.console.mask(sorted(redact.secrets))
        front_ends: list[Observer] = [CiPublisher(self.console, redact, self.stderr)]
        comment = settings.spec.comment
        # A part of a sharded run posts no comment: `testsession merge` posts one for the whole run.
        if comment.enabled and settings.shard is None:
            # Imported only then: most runs post no comment (~44 ms of imports).
            from runner.ci.comment import CommentPublisher, comment_key

            key = comment.key or comment_key(settings.spec_path, self.environ)
            front_ends.append(CommentPublisher(key, comment.gitlabTokenVariable, self.console, redact))
        # The console last: its verdict line ends the log.
        self.observer = Observers([*front_ends, self.console])

    # --- the commands -------------------------------------------------------------------------

    def _baseline(self) -> Baseline | BaselineWarning | None:
        path = self.settings.spec.baseline
        if not path:
            return None
        from runner.job.baseline import BaselineWarning, load_baseline

        loaded = load_baseline(path)
        if isinstance(loaded, BaselineWarning) or loaded.warning:
            self.observer.notify(Note(f"warning: {loaded.warning}"))
        return loaded

    def run(self) -> int:
        # The build inside the signal handling: a signal while it starts or is awaited ends the
        # command (Interrupted), and leaving the block stops the build on every way out.
        if self.settings.source == "demo":
            self.observer.notify(
                Note(f"{DEMO_MARK} --checks FILE runs your own checks against the build", always=True)
            )
        _remove_leftovers(self.settings.no_account)
        with self._held_lines(), self._signals(), self._build():
            return self._run_checks()

    @contextmanager
    def _held_lines(self) -> Iterator[None]:
        """The result lines the console holds for a CI log (up to FLUSH_SECONDS of them) are written
        on every way out: a bug between two events, an exit, not only the run's next event."""
        try:
            yield
        finally:
            self.console.flush()

    def _build(self) -> AbstractContextManager[None]:
        """The build for the block's life (runner/job/build.py); nothing without one."""
        plan = self.settings.build_plan
        if plan is None:
            return nullcontext()
        from runner.job.build import running_build

        return running_build(plan, self.console.line, self.console.verbose, self.redact)

    def _run_checks(self) -> int:
        requests, commit = self._requests()
        baseline = None if self.settings.detach else self._baseline()
        quarantine = self._quarantine()
        self.console.quarantine = quarantine
        if not self.settings.detach:
            self.console.past_runs = self._past_runs()
        events = EventQueue()
        with ExitStack() as scope:
            with memory.start_up():  # the client, or a checks file's engine and state
                source = scope.enter_context(self._source(events))
            self._check_writable()
            plan = self._shard(source, requests)
            if plan is not None:
                requests = plan.requests
            runner = self._runner = Runner(
                source,
                self.settings.plan,
                self.observer,
                commit,
                baseline=baseline,
                quarantine=quarantine,
                events=events,
            )
            outcome = runner.run(requests, detach=self.settings.detach)
        # The run is over (a signal now changes nothing, see _signals): the source, and what it
        # reaches (a client, an emulator's world), is let go before the reports are made (at
        # 10,000 checks it would hold ~40 MiB through the reports' own peak).
        self._runner, self._ran = None, True
        del source, runner
        outcome = outcome.model_copy(update=self._where(plan, outcome))
        if quarantine is not None and self.settings.checks is None:
            self._unmatched_quarantine(outcome)
        if not self.settings.detach:
            outcome = self._history(outcome)
        if self.settings.detach:
            for session in outcome.sessions:
                if session.testSessionId:
                    self._print_stdout(f"{session.testSessionId} {session.link or ''}".strip())
            return self._finish(outcome, write_reports=False)
        return self._finish(outcome)

    def wait(self, session_id: str) -> int:
        with self._held_lines(), self._signals():
            baseline = self._baseline()
            events = EventQueue()
            quarantine = self._quarantine()  # the spec's (--spec): the checks are known from the results
            self.console.quarantine = quarantine
            from runner.job.remote import RemoteSource

            with self._client(events, use_emulator=False) as client:
                self._check_writable()
                plan, observer = self.settings.plan, self.observer
                runner = self._runner = Runner(
                    RemoteSource(client),
                    plan,
                    observer,
                    SessionMetadata(),
                    baseline=baseline,
                    quarantine=quarantine,
                    events=events,
                )
                outcome = runner.wait_for(session_id)
            return self._finish(outcome)

    # --- parts --------------------------------------------------------------------------------

    def _quarantine(self) -> Quarantine | None:
        """The quarantine entries of the checks file and the spec, judged on the run's day (exit 2 for
        an entry naming no check, or too long); each expired entry said in one line. None without any."""
        checks = self.settings.checks
        sources = [(checks.path, checks.quarantine)] if checks is not None and checks.quarantine else []
        if self.settings.spec.quarantine:
            sources.append((self.settings.spec_path or "the spec", tuple(self.settings.spec.quarantine)))
        if not sources:
            return None
        from runner.core import clock
        from runner.core.errors import SpecError
        from runner.job.outcome import ExpiredQuarantine, QuarantineOutcome
        from runner.job.quarantine import Quarantine, expired_line, resolve

        today = clock.today()
        # A checks file's run knows its checks before they run; the service's is told after.
        names = [(c.id, c.name) for c in checks.checks] if checks is not None else None
        holding: dict[str, QuarantineOutcome] = {}
        expired: list[ExpiredQuarantine] = []
        problems: list[str] = []
        for source, entries in sources:
            try:
                found = resolve(entries, names, today, source)
            except SpecError as exc:
                problems += exc.problems
                continue
            holding.update(found.holding)
            expired += found.expired
        if problems:
            raise SpecError(problems)
        quarantine = Quarantine(holding, tuple(expired))
        for entry in quarantine.expired:
            self.observer.notify(Note(expired_line(entry)))
        return quarantine

    def _past_runs(self) -> dict[str, list[CheckRun]]:
        """Each check's runs before this one (with --state; a sharded part records none): the
        console's line of a failure says how often it failed lately. Read before the file is opened
        for the run; a file that cannot be read is said by the run's own open, or is new."""
        if self.settings.state is None or self.settings.shard is not None:
            return {}
        from runner.job.history import REPORT_RUNS, check_key
        from runner.state.store import StateFileError, read_check_runs

        checks = self.settings.checks
        keys = [check_key(c.id, c.name) for c in checks.checks] if checks is not None else None
        try:
            return read_check_runs(self.settings.state, last=REPORT_RUNS - 1, keys=keys)
        except StateFileError:
            return {}

    def _unmatched_quarantine(self, outcome: Outcome) -> None:
        """A run of the service learns its checks from the results: an entry that matched none is said."""
        ran = {name for r in outcome.all_results() for name in (r.checkId, r.name) if name}
        for entry in self.settings.spec.quarantine:
            if entry.check not in ran:
                self.observer.notify(
                    Note(f"warning: quarantine entry {entry.check!r} matched no check of this run")
                )

    def _history(self, outcome: Outcome) -> Outcome:
        """With --state: this run's results added to each check's history, and the history (this run
        included) on each result. A part of a sharded run records nothing: the merge records the run."""
        if self.settings.state is None or self.settings.shard is not None:
            return outcome
        from runner.cli.history_command import record_history

        def warn(text: str) -> None:
            self.observer.notify(Note(text))

        return record_history(outcome, self.settings.state, warn, self.redact, self.console.past_runs)

    def _shard(self, source: ResultSource, requests: list[TriggerRequest]) -> ShardPlan | None:
        """This job's part of the matched checks (--shard), said on the console; None unsplit."""
        shard = self.settings.shard
        if shard is None:
            return None
        from runner.job.shard import NO_DURATIONS, load_durations, plan_shard

        # Only when named: every part must read the same durations (a per-job --state would split
        # each job its own way, and the merge would refuse the parts).
        durations_path = self.settings.spec.shard.durations if self.settings.spec.shard else None
        durations = load_durations(durations_path) if durations_path else NO_DURATIONS
        if durations.warning:
            self.observer.notify(Note(f"warning: {durations.warning}"))
        plan = plan_shard(source, requests, shard, durations)
        info = plan.info
        balanced = f", balanced by the durations in {durations_path}" if durations.by_check else ""
        self.observer.notify(
            Note(f"shard {info.label}: {info.checks} of the {info.matched} matched checks{balanced}")
        )
        return plan

    def _where(self, plan: ShardPlan | None, outcome: Outcome) -> dict[str, object]:
        """What results.json records of where the run ran and which part it was."""
        update: dict[str, object] = {"service": self._service()}
        if plan is not None:
            update["shard"] = plan.info
            if not plan.requests and not outcome.message:
                update["message"] = (
                    f"shard {plan.info.label} holds none of the {plan.info.matched} matched checks: "
                    "nothing ran in this part"
                )
        return update

    def _service(self) -> str | None:
        """Where the sessions ran: "local" (a checks file's, by the engine here), "emulator" (a
        world's), else the API's host."""
        if self.settings.checks is not None:
            return "local"
        return "emulator" if self.settings.emulator else self._host()

    def _host(self) -> str | None:
        from urllib.parse import urlsplit

        return urlsplit(self.settings.connection.base_url or "").hostname

    def _requests(self) -> tuple[list[TriggerRequest], SessionMetadata]:
        requests = []
        for session in self.settings.spec.sessions:
            # The spec's own fields win over CI variables, which win over the local repository.
            metadata = resolve_metadata(
                session.metadata, self.environ, Path.cwd(), self._note, self.redact.secrets
            )
            requests.append(session.to_trigger(metadata))
        commit = requests[0].metadata if requests and requests[0].metadata else SessionMetadata()
        return requests, commit

    def _check_writable(self) -> None:
        """Before anything is triggered (and after the credentials were found): a report that cannot
        be written must not cost the work."""
        if not self.settings.detach:
            files = {kind: p for kind, p in self.settings.report_paths.items() if isinstance(p, Path)}
            check_writable(files, self.environ)

    def _note(self, text: str) -> None:
        self.observer.notify(Note(text, verbose=True))

    @contextmanager
    def _source(self, events: EventQueue) -> Iterator[ResultSource]:
        """Where the run's results come from: a checks file's checks run here by the engine
        (job/local.py), else the service (an account, or the emulator for a world) through the client."""
        checks = self.settings.checks
        if checks is None:
            from runner.job.remote import RemoteSource

            with self._client(events) as client:
                yield RemoteSource(client)
            return
        from runner.job.local import LocalSource

        state = None
        if self.settings.state is not None:
            from runner.state.store import StateFile

            state = StateFile.open(self.settings.state)
        source = LocalSource(checks, state, workers=self.settings.workers)
        try:
            self.console.verbose("checks run in this process by the engine (no service, no emulator)")
            if state is not None:
                self.console.verbose(f"state in {state.describe()}")
            yield source
        finally:
            source.close()
            if state is not None:
                state.close()

    @contextmanager
    def _client(self, events: EventQueue, use_emulator: bool = True) -> Iterator[ApiClient]:
        """The client; with --emulator, an in-process emulator for the job's life."""
        connection = self.settings.connection
        budget = self.settings.retry_budget()
        if not (use_emulator and self.settings.emulator):
            with connection.client(self.redact, budget, events.retrying) as client:
                yield client
            return
        from runner.client.transport import LocalTransport
        from runner.emulator.core.answers import LocalService, needs_http
        from runner.emulator.core.world import load_world

        world = load_world(self.settings.world)
        if needs_http(world):
            with self._served(world, connection, budget, events) as client:
                yield client
            return
        # No server: the client's requests are answered by the Backend in this process (half a
        # second of FastAPI and uvicorn less, and no session rendered over a socket).
        service = LocalService(world, state=self.settings.state)
        try:
            self.redact.add(service.api_key)
            self.console.verbose("emulator in this process (no HTTP server)")
            if service.backend.state is not None:
                self.console.verbose(f"emulator state in {service.backend.state.describe()}")
            local = self._local_connection(service, connection, service.BASE_URL)
            with local.client(
                self.redact, budget, events.retrying, transport=LocalTransport(service.serve)
            ) as client:
                yield client
        finally:
            service.stop()

    @contextmanager
    def _served(
        self, world: World, connection: Connection, budget: float | None, events: EventQueue
    ) -> Iterator[ApiClient]:
        """The emulator on a loopback port, for a world whose faults act on the connection."""
        from runner.emulator import Emulator

        emulator = Emulator(world=world, state=self.settings.state).start()
        try:
            self.redact.add(emulator.api_key)
            self.console.verbose(f"emulator serving at {emulator.url}")
            if emulator.backend.state is not None:
                self.console.verbose(f"emulator state in {emulator.backend.state.describe()}")
            local = self._local_connection(emulator, connection, emulator.url)
            with local.client(self.redact, budget, events.retrying) as client:
                yield client
        finally:
            emulator.stop()

    def _local_connection(
        self, local: LocalService | Emulator, connection: Connection, url: str
    ) -> Connection:
        """The embedded emulator's credentials: the environment's, else the world's first key."""
        return Connection(
            base_url=url,
            account_id=self.environ.get(ENV_ACCOUNT_ID) or local.account_id,
            api_key=self.environ.get(ENV_API_KEY) or local.api_key,
            request_timeout=connection.request_timeout,
            account_header=local.account_header,
        )

    @contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM from the command's first step. Before the Runner exists nothing was
        triggered: the signal ends the command at once (Interrupted: its reports say so). After, the
        Runner cancels what it started and the partial reports are written; a signal while the
        final reports are written changes nothing."""

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if self._ran:
                return
            if self._runner is None:
                stop_at_once(signum, frame)
            else:
                name = signal.Signals(signum).name
                code = ExitCode.INTERRUPTED if signum == signal.SIGINT else ExitCode.TERMINATED
                self._runner.interrupt(name, code)

        with handle_signals(on_signal):
            yield

    def _finish(self, outcome: Outcome, write_reports: bool = True) -> int:
        if self.settings.source is not None:
            outcome = local_outcome(outcome, self.settings.source)
        # Masked field by field before rendering: once a report escapes (XML, markdown) or cuts a text,
        # a secret no longer matches its mask in the rendered file.
        # One search of the outcome's JSON first: with no secret in it (the usual case), there is
        # nothing to mask, and 10,000 results are not walked string by string (1.2 s).
        if self._no_secret_in(outcome):
            shown = outcome
        else:
            shown = Outcome.model_validate(redact_data(outcome.model_dump(), self.redact))
        written, lost = self.write_reports(shown) if write_reports else ({}, [])
        failed_closed = bool(lost) and outcome.exitCode == ExitCode.OK
        if failed_closed:
            # The digest (the console's verdict, the CI outputs and summary) says the code the
            # process returns, as the reports written after the loss do (see write_reports).
            shown = _failed_closed(shown, lost)
        self.observer.notify(Finished(digest(shown), written))
        if failed_closed:
            with suppress(OSError, ValueError):
                print(
                    f"testsession: error: exit {int(ExitCode.USAGE)}: {shown.message} (see above)",
                    file=self.stderr,
                )
            return ExitCode.USAGE
        return outcome.exitCode

    def _no_secret_in(self, outcome: Outcome) -> bool:
        if self.redact.empty:  # no secret known: no JSON of every result to search
            return True
        try:
            return self.redact.absent_from_json(outcome.model_dump_json())
        except ValueError:  # not writable as JSON (never seen): masked field by field, as before
            return False

    def write_reports(self, outcome: Outcome) -> tuple[dict[str, Path], list[str]]:
        """Each report on its own: one that cannot be rendered or written never costs the others.
        Returns the reports written and the kinds that could not be.

        A gate fails closed: a report the user asked for and does not get is no pass. Once one of a
        passing run is lost, the reports written after it say the exit the run ends with (2) and
        which report was lost; results.json is written last, so that a tool reading it alone never
        takes the run for a pass (only a lost results.json leaves the others saying 0)."""
        from runner.reports import json_chunks, render_json, render_junit, render_markdown, write_atomic

        renderers = {"json": render_json, "junit": render_junit, "markdown": render_markdown}
        written: dict[str, Path] = {}
        lost: list[str] = []
        passed = outcome.exitCode == ExitCode.OK
        paths = sorted(self.settings.report_paths.items(), key=lambda item: item[0] == "json")
        for kind, path in paths:
            if lost and passed:
                outcome = _failed_closed(outcome, lost)
            try:
                if kind == "json" and path != STDOUT and self.redact.empty:
                    # Nothing to mask: pydantic's bytes as they are, not decoded to a text and
                    # encoded again, and a result at a time (6.7 MiB at 10,000 results).
                    assert isinstance(path, Path)
                    write_atomic(path, json_chunks(outcome))
                    written[kind] = path
                    continue
                text = self.redact(renderers[kind](outcome))
                if path == STDOUT:
                    self._print_stdout(text.rstrip("\n"))
                    continue
                assert isinstance(path, Path)
                write_atomic(path, text)
                written[kind] = path
            except (OSError, ValueError) as exc:
                lost.append(kind)
                # stderr closed or broken: the exit code stands (an error escaping here would
                # cost the verdict).
                with suppress(OSError, ValueError):
                    print(
                        f"testsession: error: could not write {kind} report {path}: {exc}", file=self.stderr
                    )
        return written, lost

    def _print_stdout(self, text: str) -> None:
        # stdout closed: the reports on disk and the exit code stand.
        with suppress(OSError, ValueError):
            print(self.redact(text), file=self.stdout, flush=True)


def _failed_closed(outcome: Outcome, lost: list[str]) -> Outcome:
    """A passing run's outcome once reports it was asked for could not be written: exit 2, naming them."""
    reports = f"{' and '.join(lost)} report{'s' if len(lost) > 1 else ''}"
    return outcome.model_copy(
        update={
            "exitCode": int(ExitCode.USAGE),
            "verdict": "usage-error",
            "message": f"the gate passed, but the {reports} could not be written",
        }
    )


def local_outcome(outcome: Outcome, source: Literal["demo", "world", "checks"]) -> Outcome:
    """The outcome of a run against the embedded service: says what it ran, and links to nothing.
    The service's pages lived at a loopback address that is gone once the run is over."""
    sessions = [
        session.model_copy(
            update={"link": None, "results": [_unlinked(result) for result in session.results]}
        )
        for session in outcome.sessions
    ]
    return outcome.model_copy(update={"world": source, "sessions": sessions})


def _unlinked(result: ResultOutcome) -> ResultOutcome:
    """`result` without its links; itself when it has none (a checks file's run has none): a copy of
    every result would hold a second set of them while the reports are written."""
    if result.link is None and all(a.link is None for a in result.failedAttempts):
        return result
    attempts = [a.model_copy(update={"link": None}) for a in result.failedAttempts]
    return result.model_copy(update={"link": None, "failedAttempts": attempts})
