"""Where the browser checks' files (screenshots, traces) go: `TESTSESSION_ARTIFACTS_DIR`, default
testsession-reports/browser in the working directory. Its own small module: a run that removes what a
killed run left there (cli/job.py) reads it without loading the browser protocol (~90 ms)."""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "TESTSESSION_ARTIFACTS_DIR"
DEFAULT = "testsession-reports/browser"


def artifacts_dir() -> Path:
    return Path(os.environ.get(VARIABLE, DEFAULT))
