"""The state file (`--state PATH`): error groups, analyses and sessions in SQLite, so that a
failure seen by yesterday's pipeline is known today. Without one, the stores keep their state in memory
only and nothing here runs.

- One writer: the file is locked for the life of the process (`PATH.lock`, holding the writer's pid;
  the lock goes when the process does, even on SIGKILL). A second process waits up to
  LOCK_WAIT_SECONDS, then says which pid has the file.
- Every change is committed at once (autocommit, WAL, synchronous=NORMAL): a crash or SIGKILL loses
  nothing that was committed; only a power cut may lose the last transactions.
- Times are wall-clock seconds since the epoch (UTC); the emulator's stores turn them into their
  SimClock's time, a local run (job/local_groups.py) keeps them as they are.
- A file that is not SQLite, an SQLite database of another application, or a state file of a newer
  schema (PRAGMA application_id / user_version) is refused with one line naming the file.
- A session still running when its process died is read back as CANCELLED at the moment it was last
  rendered (its checks will never finish: the process that ran them is gone).
- Bounded: at open, only the newest MAX_SESSIONS sessions and the MAX_GROUPS most recently seen error
  groups (with their analyses) are kept. A group keeps its occurrence count and the evidence of its
  latest real failure in `extra` (at most checks/evidence.MAX_EVIDENCE_CHARS of JSON), so that a
  known group is counted on and analysed from the same evidence after a restart.
- Each check's runs (`check_runs`, schema version 2, migrated from 1): the newest MAX_RUNS_PER_CHECK of
  each of the MAX_HISTORY_CHECKS checks that ran last, recorded by the job after a run's verdict
  (runner/job/history.py says what they mean); `read_check_runs` reads them without the lock.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from runner.core.errors import UsageError
from runner.core.words import counted
from runner.models import Analysis, TestSession

if TYPE_CHECKING:  # sqlite3 is imported where a state file is opened: most runs keep no state
    import sqlite3

APPLICATION_ID = 0x54534553  # "TSES": PRAGMA application_id of a testsession state file
SCHEMA_VERSION = 2  # PRAGMA user_version; MIGRATIONS[v] turns version v into v + 1
LOCK_WAIT_SECONDS = 2.0
# The file stays bounded however many pipelines use it: the newest sessions and the most recently seen
# error groups are kept (a group is what makes a failure known; a session only answers a late GET).
MAX_SESSIONS = 500
MAX_GROUPS = 10_000
# A check's history (`testsession history`, the reports' "failed 3 of the last 20 runs"): its newest
# MAX_RUNS_PER_CHECK runs, for the MAX_HISTORY_CHECKS checks that ran most recently.
MAX_RUNS_PER_CHECK = 200
MAX_HISTORY_CHECKS = 10_000
SQLITE_HEADER = b"SQLite format 3\x00"
_LOCK_OFFSET = 64  # Windows locks a byte range; the pid is written before it, where others can read it

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 0 -> 1
        """CREATE TABLE error_groups (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            kind TEXT NOT NULL,              -- test-session | check
            check_id TEXT NOT NULL,
            raw TEXT NOT NULL,               -- the last raw message
            cleaned TEXT NOT NULL,
            hash TEXT NOT NULL,
            first_seen REAL NOT NULL,        -- seconds since the epoch, UTC
            last_seen REAL NOT NULL,
            environments TEXT NOT NULL,      -- JSON list
            analyses TEXT NOT NULL,          -- JSON list of analysis ids, newest first
            extra TEXT NOT NULL DEFAULT '{}' -- JSON: fields a later version adds, without a migration
        )""",
        "CREATE INDEX error_groups_account ON error_groups (account_id, first_seen)",
        """CREATE TABLE analyses (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            group_id TEXT NOT NULL,
            created REAL NOT NULL,
            ready_at REAL NOT NULL,
            user_context TEXT,
            model TEXT,
            content TEXT                     -- JSON of the analysis once completed, else NULL
        )""",
        "CREATE INDEX analyses_account ON analyses (account_id)",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            status TEXT NOT NULL,
            final INTEGER NOT NULL,          -- 1 once the status is not RUNNING
            base_url TEXT NOT NULL,          -- the links' origin when rendered
            rendered_at REAL NOT NULL,       -- the moment the body shows
            body TEXT NOT NULL               -- the session as GET /v1/test-sessions/{id} answered it
        )""",
        "CREATE INDEX sessions_open ON sessions (final)",
    ),
    (  # 1 -> 2: each check's runs (issue 43)
        """CREATE TABLE check_runs (
            check_key TEXT NOT NULL,         -- the check's id, else 'name:' and its name
            check_id TEXT,
            name TEXT NOT NULL,
            location TEXT,
            at REAL NOT NULL,                -- when the run was recorded, seconds since the epoch, UTC
            verdict TEXT NOT NULL,           -- passed, failed, degraded, flaky, error, cancelled, running
            duration_ms INTEGER,
            attempts INTEGER NOT NULL,
            error_group TEXT,                -- its first error group's id
            error TEXT,                      -- its error message, cut to MAX_ERROR_CHARS
            novelty TEXT,                    -- a failure's new, known or untold
            commit_id TEXT,
            quarantined INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX check_runs_key ON check_runs (check_key, at)",
    ),
)
MAX_ERROR_CHARS = 500


class StateFileError(UsageError):
    """A state file that cannot be used; the message names the file and why (exit code 2)."""


@dataclass(frozen=True)
class GroupRow:
    id: str
    account_id: str
    kind: str
    check_id: str
    raw: str
    cleaned: str
    hash: str
    first_seen: float  # epoch seconds
    last_seen: float
    environments: list[str]
    analyses: list[str]
    # In the `extra` column (no migration: a file of an earlier version reads back 1 and no evidence).
    occurrences: int = 1  # failed results in the group, over every session the file has seen
    evidence: dict[str, Any] | None = None  # the latest real failure's evidence (checks/evidence.py)


def _extra(row: GroupRow) -> str:
    extra: dict[str, Any] = {"occurrences": row.occurrences}
    if row.evidence is not None:
        extra["evidence"] = row.evidence
    return json.dumps(extra, ensure_ascii=False)


def _from_extra(text: str) -> tuple[int, dict[str, Any] | None]:
    """(occurrences, evidence) from the `extra` column; what it cannot read is 1 and None."""
    try:
        extra = json.loads(text)
    except ValueError:
        return 1, None
    if not isinstance(extra, dict):
        return 1, None
    count = extra.get("occurrences")
    evidence = extra.get("evidence")
    return (
        count if isinstance(count, int) and count >= 1 else 1,
        evidence if isinstance(evidence, dict) else None,
    )


@dataclass(frozen=True)
class AnalysisRow:
    id: str
    account_id: str
    group_id: str
    created: float  # epoch seconds
    ready_at: float
    user_context: str | None
    model: str | None
    content: str | None  # JSON


class CheckRun(NamedTuple):
    """One run of one check, as the history keeps it (a tuple: a run of 10,000 checks reads 200,000)."""

    check_key: str
    check_id: str | None
    name: str
    location: str | None
    at: float  # epoch seconds
    verdict: str
    duration_ms: int | None
    attempts: int
    error_group: str | None = None
    error: str | None = None
    novelty: str | None = None
    commit_id: str | None = None
    quarantined: bool = False


@dataclass(frozen=True)
class SessionRow:
    id: str
    account_id: str
    base_url: str
    body: dict[str, Any]  # the rendering, as JSON data


def iso(epoch: float) -> str:
    """The API's time format (as SimClock.iso)."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --- the lock --------------------------------------------------------------------------------------


def _try_lock(fd: int) -> bool:
    """Takes the lock without waiting; False when another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 32).decode("ascii", "replace").strip()
    return f" (pid {text})" if text.isdigit() else ""


def _refuse_special(path: Path) -> None:
    """StateFileError when `path` is a FIFO, device or socket: its header's read would wait for a
    FIFO's writer forever (a CI cache can plant one as it can a link) or read a device."""
    try:
        mode = os.stat(path).st_mode  # not a link: refused before
    except OSError:
        return  # missing (made now), or the open below says why
    if not stat.S_ISREG(mode):
        raise StateFileError(
            f"{path}: not a regular file (a FIFO, device or socket); give the state file a new path"
        )


def _lock(path: Path, wait_seconds: float) -> int:
    """The open, locked `PATH.lock` with this process's pid in it."""
    from runner.core.files import PlantedLink, open_own

    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = open_own(lock_path, os.O_RDWR | os.O_CREAT, 0o644)  # a planted link is never written through
    except PlantedLink as exc:
        raise StateFileError(str(exc)) from None
    except OSError as exc:
        raise StateFileError(f"{lock_path}: cannot create the state file's lock ({exc.strerror})") from None
    deadline = time.monotonic() + wait_seconds
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            holder = _holder(fd)
            os.close(fd)
            raise StateFileError(
                f"{path}: in use by another testsession process{holder}; stop it, or give this run "
                "another state file"
            )
        time.sleep(0.05)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".ljust(_LOCK_OFFSET).encode("ascii"))
    return fd


# --- what a file is --------------------------------------------------------------------------------


def _refusal(path: Path, connection: sqlite3.Connection) -> str | None:
    """Why this SQLite file is not ours to use (None: ours, or empty)."""
    application_id = connection.execute("PRAGMA application_id").fetchone()[0]
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if application_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            return (
                f"{path}: a testsession state file of a newer schema (version {version}; this testsession "
                f"reads versions up to {SCHEMA_VERSION}): upgrade testsession or give it another state file"
            )
        return None
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if application_id == 0 and not tables:
        return None  # an empty database: made ours below
    what = (
        f"application_id {application_id & 0xFFFFFFFF:#010x}"
        if application_id
        else "tables " + ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
    )
    return (
        f"{path}: not a testsession state file (an SQLite database of another application: {what}); "
        "give the state file a new path"
    )


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read the state file ({exc.strerror})") from None
    if head and head != SQLITE_HEADER:
        raise StateFileError(
            f"{path}: not a testsession state file (not an SQLite database); give the state file a new path"
        )


# What every row must hold for this version to read it: a value of another type (an edit, a tool
# that wrote into the file, a damaged cache) is named at open, not met later as a traceback.
_NUMBER = ("typeof({c}) NOT IN ('integer', 'real')", "a number")
_INTEGER = ("typeof({c}) != 'integer'", "an integer")
_TEXT = ("typeof({c}) != 'text'", "text")
_LIST = ("(typeof({c}) != 'text' OR NOT json_valid({c}) OR json_type({c}) != 'array')", "a JSON list")
_OBJECT = ("(typeof({c}) != 'text' OR NOT json_valid({c}) OR json_type({c}) != 'object')", "a JSON object")
_OPTIONAL_OBJECT = (f"({{c}} IS NOT NULL AND {_OBJECT[0]})", "null or a JSON object")
_ROW_RULES: tuple[tuple[str, str, tuple[str, str]], ...] = (
    ("error_groups", "first_seen", _NUMBER), ("error_groups", "last_seen", _NUMBER),
    ("error_groups", "raw", _TEXT), ("error_groups", "cleaned", _TEXT), ("error_groups", "check_id", _TEXT),
    ("error_groups", "environments", _LIST), ("error_groups", "analyses", _LIST),
    ("analyses", "created", _NUMBER), ("analyses", "ready_at", _NUMBER),
    ("analyses", "content", _OPTIONAL_OBJECT),
    ("sessions", "rendered_at", _NUMBER), ("sessions", "final", _INTEGER), ("sessions", "body", _OBJECT),
)  # fmt: skip


def damaged(path: Path, what: str) -> StateFileError:
    """The error for a state file whose content this version cannot read, saying what to do."""
    return StateFileError(
        f"{path}: damaged state file ({what}); delete it (it keeps only what earlier runs left: error "
        "groups, analyses and sessions; a new one is made) or give the state file another path"
    )


def _damage(path: Path, connection: sqlite3.Connection) -> StateFileError | None:
    """The first value of a row that is not of its column's type, as an error naming it; or None."""
    import sqlite3

    for table, column, (rule, kind) in _ROW_RULES:
        try:
            row = connection.execute(
                f"SELECT rowid FROM {table} WHERE {rule.format(c=column)} LIMIT 1"
            ).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such function" in str(exc):  # an SQLite built without JSON functions: types only
                continue
            raise
        if row is not None:
            return damaged(path, f"table {table}, row {row[0]}: {column} is not {kind}")
    return None


def _cancelled(body: dict[str, Any], at: float) -> dict[str, Any]:
    """A rendering still RUNNING, as CANCELLED at `at` (as a cancel at that moment renders it)."""
    stopped = iso(at)
    body = {**body, "status": "CANCELLED", "stoppedAt": stopped}
    started = body.get("startedAt")
    if isinstance(started, str):
        body["timeElapsed"] = max(0, round((at - _epoch(started)) * 1000))
    results = []
    for result in body.get("results") or []:
        if isinstance(result, dict) and result.get("status") == "RUNNING":
            result = {**result, "status": "CANCELLED", "aborted": True, "stoppedAt": stopped}
        results.append(result)
    body["results"] = results
    return body


def _signature(session: TestSession) -> tuple[Any, ...]:
    """What changes when something happens in a session (timeElapsed alone does not count)."""
    results = tuple((r.testSessionResultId, r.status, tuple(r.errorGroupIds)) for r in session.results)
    return session.status, results


# --- the file --------------------------------------------------------------------------------------


class StateFile:
    """An open state file. Thread-safe (one connection behind a lock); calls after close() do nothing."""

    def __init__(self, path: Path, connection: sqlite3.Connection, lock_fd: int) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = connection
        self._lock_fd: int | None = lock_fd
        self._mutex = threading.Lock()
        self._signatures: dict[str, tuple[Any, ...]] = {}  # session id -> what was saved last

    @classmethod
    def open(cls, path: str | Path, wait_seconds: float = LOCK_WAIT_SECONDS) -> StateFile:
        """Opens (creating or migrating) the state file at `path`, locked for this process."""
        from runner.core.files import PlantedLink, refuse_link

        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            raise StateFileError(f"{path}: is a directory; give the state file's path")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateFileError(f"{path.parent}: cannot create the directory ({exc.strerror})") from None
        import sqlite3

        lock_fd = _lock(path, wait_seconds)
        try:
            # SQLite opens by name and follows links: the file, its WAL, shared memory and rollback
            # journal must not be links (checked under the lock, which keeps other runs out)
            for name in (path.name, *(path.name + suffix for suffix in ("-wal", "-shm", "-journal"))):
                refuse_link(path.with_name(name))
            _refuse_special(path)
            if path.exists():
                _check_header(path)
            connection = sqlite3.connect(
                path, timeout=wait_seconds, isolation_level=None, check_same_thread=False
            )
            try:
                refusal = _refusal(path, connection)
                if refusal:
                    raise StateFileError(refusal)
                _prepare(connection)
                damage = _damage(path, connection)
                if damage is not None:
                    raise damage
                try:
                    _tidy(connection)
                except (ValueError, TypeError, AttributeError) as exc:  # a body of another shape
                    raise damaged(path, f"a session cannot be read: {type(exc).__name__}") from None
            except BaseException:
                connection.close()
                raise
        except sqlite3.Error as exc:
            os.close(lock_fd)
            raise StateFileError(f"{path}: cannot be used as a state file ({exc})") from None
        except PlantedLink as exc:
            os.close(lock_fd)
            raise StateFileError(str(exc)) from None
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(path, connection, lock_fd)

    def close(self) -> None:
        with self._mutex:
            if self._db is not None:
                self._db.close()
                self._db = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the lock
                self._lock_fd = None

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection | None]:
        with self._mutex:
            yield self._db

    def counts(self) -> dict[str, int]:
        """Rows per table: what earlier runs left."""
        with self._connection() as db:
            if db is None:
                return {}
            return {
                table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("error_groups", "analyses", "sessions", "check_runs")
            }

    def describe(self) -> str:
        """`PATH (3 error groups, 1 analysis, 4 sessions)`: what a user sees when the emulator starts."""
        counts = self.counts()
        names = (("error_groups", "error group"), ("analyses", "analysis"), ("sessions", "session"))
        parts = [counted(counts.get(table, 0), noun) for table, noun in names]
        return f"{self.path} ({', '.join(parts)})"

    def latest(self) -> float | None:
        """The latest moment the file records (epoch seconds): a new clock must not start before it."""
        with self._connection() as db:
            if db is None:
                return None
            row = db.execute(
                "SELECT max(t) FROM (SELECT max(last_seen) AS t FROM error_groups"
                " UNION ALL SELECT max(created) FROM analyses"
                " UNION ALL SELECT max(rendered_at) FROM sessions)"
            ).fetchone()
            return float(row[0]) if row and row[0] is not None else None

    # --- error groups and analyses -----------------------------------------------------------

    def save_group(self, row: GroupRow) -> None:
        with self._connection() as db:
            if db is None:
                return
            db.execute(
                "INSERT INTO error_groups (id, account_id, kind, check_id, raw, cleaned, hash, first_seen,"
                " last_seen, environments, analyses, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET raw = excluded.raw, cleaned = excluded.cleaned,"
                " hash = excluded.hash, first_seen = excluded.first_seen, last_seen = excluded.last_seen,"
                " environments = excluded.environments, analyses = excluded.analyses, extra = excluded.extra",
                (
                    row.id, row.account_id, row.kind, row.check_id, row.raw, row.cleaned, row.hash,
                    row.first_seen, row.last_seen, json.dumps(row.environments), json.dumps(row.analyses),
                    _extra(row),
                ),
            )  # fmt: skip

    def groups(self, account_id: str) -> list[GroupRow]:
        """The account's groups, oldest first."""
        with self._connection() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT id, account_id, kind, check_id, raw, cleaned, hash, first_seen, last_seen,"
                " environments, analyses, extra FROM error_groups WHERE account_id = ?"
                " ORDER BY first_seen, id",
                (account_id,),
            ).fetchall()
        groups = []
        for row in rows:
            occurrences, evidence = _from_extra(row[11])
            groups.append(
                GroupRow(
                    id=row[0],
                    account_id=row[1],
                    kind=row[2],
                    check_id=row[3],
                    raw=row[4],
                    cleaned=row[5],
                    hash=row[6],
                    first_seen=row[7],
                    last_seen=row[8],
                    environments=json.loads(row[9]),
                    analyses=json.loads(row[10]),
                    occurrences=occurrences,
                    evidence=evidence,
                )
            )
        return groups

    def save_analysis(self, row: AnalysisRow) -> None:
        with self._connection() as db:
            if db is None:
                return
            db.execute(
                "INSERT OR REPLACE INTO analyses (id, account_id, group_id, created, ready_at, user_context,"
                " model, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.id, row.account_id, row.group_id, row.created, row.ready_at, row.user_context,
                    row.model, row.content,
                ),
            )  # fmt: skip

    def analyses(self, account_id: str) -> list[AnalysisRow]:
        with self._connection() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT id, account_id, group_id, created, ready_at, user_context, model, content"
                " FROM analyses WHERE account_id = ?",
                (account_id,),
            ).fetchall()
        for row in rows:  # read when the emulator starts: one this version cannot read is named here
            try:
                if row[7] is not None:
                    Analysis.model_validate_json(row[7])
            except ValueError:
                raise damaged(self.path, f"table analyses, id {row[0]}: content is not an analysis") from None
        return [AnalysisRow(*row) for row in rows]

    # --- each check's runs --------------------------------------------------------------------

    def record_runs(self, runs: list[CheckRun]) -> None:
        """Adds one run of each check, in one transaction; a check keeps its newest MAX_RUNS_PER_CHECK."""
        with self._connection() as db:
            if db is None:
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT INTO check_runs (check_key, check_id, name, location, at, verdict, duration_ms,"
                    " attempts, error_group, error, novelty, commit_id, quarantined)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            r.check_key, r.check_id, r.name, r.location, r.at, r.verdict, r.duration_ms,
                            r.attempts, r.error_group, (r.error or "")[:MAX_ERROR_CHARS] or None, r.novelty,
                            r.commit_id, int(r.quarantined),
                        )
                        for r in runs
                    ],
                )  # fmt: skip
                # Older than the check's MAX_RUNS_PER_CHECK-th newest run: one index range per check,
                # nothing deleted while it has fewer (the subquery is NULL).
                db.executemany(
                    "DELETE FROM check_runs WHERE check_key = ? AND at < (SELECT at FROM check_runs"
                    " WHERE check_key = ? ORDER BY at DESC LIMIT 1 OFFSET ?)",
                    [(key, key, MAX_RUNS_PER_CHECK - 1) for key in {r.check_key for r in runs}],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def check_runs(
        self, keys: list[str] | None = None, last: int = MAX_RUNS_PER_CHECK
    ) -> dict[str, list[CheckRun]]:
        """Each check's newest `last` runs, oldest first, by check key (every check when `keys` is None)."""
        return _check_runs(self._connection, keys, last)

    # --- sessions ----------------------------------------------------------------------------

    def save_session(self, account_id: str, session: TestSession, base_url: str, at: float) -> None:
        """Stores the session as rendered at `at` (epoch seconds) when something in it changed."""
        signature = _signature(session)
        with self._connection() as db:
            if db is None or self._signatures.get(session.testSessionId) == signature:
                return
            body = session.model_dump_json(exclude_unset=True)
            db.execute(
                "INSERT OR REPLACE INTO sessions (id, account_id, status, final, base_url, rendered_at, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session.testSessionId,
                    account_id,
                    session.status,
                    int(session.is_final),
                    base_url,
                    at,
                    body,
                ),
            )
            self._signatures[session.testSessionId] = signature

    def session(self, session_id: str) -> SessionRow | None:
        with self._connection() as db:
            if db is None:
                return None
            row = db.execute(
                "SELECT id, account_id, base_url, body FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if row is None:
            return None
        return SessionRow(row[0], row[1], row[2], json.loads(row[3]))


def _prepare(connection: sqlite3.Connection) -> None:
    """WAL, then the schema: created in an empty file, migrated in an older one, in one transaction."""
    connection.execute("PRAGMA journal_mode = WAL")  # where the file system has no WAL, the default stays
    connection.execute("PRAGMA synchronous = NORMAL")
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        for steps in MIGRATIONS[version:]:
            for statement in steps:
                connection.execute(statement)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _tidy(connection: sqlite3.Connection) -> None:
    """At open, in one transaction: the sessions whose process died while they ran become CANCELLED
    as they were last rendered (their checks will never finish), and what is beyond the bounds goes."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        for session_id, rendered_at, body in connection.execute(
            "SELECT id, rendered_at, body FROM sessions WHERE final = 0"
        ).fetchall():
            connection.execute(
                "UPDATE sessions SET status = 'CANCELLED', final = 1, body = ? WHERE id = ?",
                (json.dumps(_cancelled(json.loads(body), rendered_at)), session_id),
            )
        connection.execute(
            "DELETE FROM sessions WHERE id NOT IN"
            " (SELECT id FROM sessions ORDER BY rendered_at DESC LIMIT ?)",
            (MAX_SESSIONS,),
        )
        stale = "SELECT id FROM error_groups ORDER BY last_seen DESC LIMIT -1 OFFSET ?"
        connection.execute(f"DELETE FROM analyses WHERE group_id IN ({stale})", (MAX_GROUPS,))
        connection.execute(f"DELETE FROM error_groups WHERE id IN ({stale})", (MAX_GROUPS,))
        connection.execute(
            "DELETE FROM check_runs WHERE check_key IN (SELECT check_key FROM check_runs"
            " GROUP BY check_key ORDER BY max(at) DESC LIMIT -1 OFFSET ?)",
            (MAX_HISTORY_CHECKS,),
        )
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def recorded_sessions(path: str | Path, limit: int = MAX_SESSIONS) -> list[TestSession] | str:
    """The final sessions a state file keeps, oldest first, read without taking its lock (read-only:
    a sharded run reads the durations of earlier runs before its emulator opens the file); or why not.
    """
    import sqlite3

    try:
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        connection = sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_SECONDS)
    except sqlite3.Error as exc:
        return f"cannot be opened ({exc})"
    try:
        if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            return "not a testsession state file"
        rows = connection.execute(
            "SELECT body FROM sessions WHERE final = 1 ORDER BY rendered_at DESC LIMIT ?", (limit,)
        ).fetchall()
    except sqlite3.Error as exc:
        return f"cannot be read ({exc})"
    finally:
        connection.close()
    sessions = []
    for (body,) in reversed(rows):
        try:
            sessions.append(TestSession.model_validate_json(body))
        except ValueError:  # a body this version cannot read: its durations are not needed
            continue
    return sessions


_RUN_COLUMNS = (
    "check_key, check_id, name, location, at, verdict, duration_ms, attempts, error_group, error, novelty,"
    " commit_id, quarantined != 0"  # read as SQLite's 0 or 1; the same truth as the bool written
)


def _check_runs(connection: Any, keys: list[str] | None, last: int) -> dict[str, list[CheckRun]]:
    """Each check's newest `last` runs, oldest first (the reads of an open file and a read-only one).
    The run's own checks: one index range each (a run of 10,000 checks reads its window of each in a
    fraction of a second, however many runs the file keeps). Every check (`testsession history`): one
    ordered pass over the table, each check's newest `last` kept."""
    rows: list[Any] = []
    with connection() as db:
        if db is None:
            return {}
        if keys is None:
            cursor = db.execute(f"SELECT {_RUN_COLUMNS} FROM check_runs ORDER BY check_key, at, rowid")
            rows = cursor.fetchall()
        else:
            query = (
                f"SELECT {_RUN_COLUMNS} FROM check_runs WHERE check_key = ? ORDER BY at DESC, rowid DESC"
                " LIMIT ?"
            )
            for key in dict.fromkeys(keys):
                rows += reversed(db.execute(query, (key, last)).fetchall())
    runs: dict[str, list[CheckRun]] = {}
    for row in rows:
        runs.setdefault(row[0], []).append(CheckRun._make(row))
    if keys is None:
        runs = {key: kept[-last:] for key, kept in runs.items()}
    return runs


def read_check_runs(
    path: str | Path, last: int = MAX_RUNS_PER_CHECK, keys: list[str] | None = None
) -> dict[str, list[CheckRun]]:
    """Each check's newest `last` runs in the state file at `path` (of the checks `keys`, else every
    check), read without its lock and without changing it (`testsession history` while a run writes
    it); StateFileError (exit 2) naming the file when it cannot be read."""
    import sqlite3

    path = Path(path)
    if not path.is_file():
        raise StateFileError(f"{path}: no such state file (give the --state PATH your runs use)")
    _check_header(path)
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        connection = sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_SECONDS)
    except sqlite3.Error as exc:
        raise StateFileError(f"{path}: cannot be opened ({exc})") from None
    try:
        refusal = _refusal(path, connection)
        if refusal:
            raise StateFileError(refusal)
        if connection.execute("PRAGMA user_version").fetchone()[0] < 2:
            return {}  # a file of an earlier version: no run recorded yet

        @contextmanager
        def reader() -> Iterator[sqlite3.Connection]:
            yield connection

        return _check_runs(reader, keys, last)
    except sqlite3.Error as exc:
        raise StateFileError(f"{path}: cannot be read ({exc})") from None
    finally:
        connection.close()
