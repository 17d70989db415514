"""A quarantine entry, as a checks file (`quarantine:`) or a spec declares it: a check that runs as
always but whose failure does not fail the gate, until a date, with an owner who answers for it.

The file is reviewed in the pull request like code. Whether an entry names a check of the run, holds
today or is too long is decided at the run's start (runner/job/quarantine.py), with the run's clock.
"""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The longest quarantine: an entry must end within this many days of the run (documented in
# docs/history.md). A check nobody looks at for a quarter is no longer quarantined but forgotten.
MAX_QUARANTINE_DAYS = 90


class QuarantineEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    check: str = Field(min_length=1, description="The quarantined check: its name or its id.")
    owner: str = Field(min_length=1, description="Who answers for it, e.g. @payments-team.")
    reason: str | None = Field(default=None, description="Why, e.g. a ticket.")
    until: date = Field(
        description=f"The last day it holds (YYYY-MM-DD, UTC), at most {MAX_QUARANTINE_DAYS} days ahead."
    )

    @field_validator("until", mode="before")
    @classmethod
    def _a_day(cls, value: Any) -> Any:
        # A number would be read as a Unix time: only a date or its ISO text is a day here.
        if isinstance(value, date) or (isinstance(value, str) and len(value.strip()) == 10):
            return value.strip() if isinstance(value, str) else value
        raise ValueError("expected a day as YYYY-MM-DD, e.g. 2026-12-15")

    @field_validator("check", "owner")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()
