"""Which CI system runs this process: decided here and nowhere else, from the variable each one sets.

Low in the stack because two layers ask: commit metadata (`metadata/ci.py`) and the front ends
(`ci/platform.py`, which picks GitHub, GitLab or local once per run). A flag variable counts only
when it says true: `GITLAB_CI=false`, `GITLAB_CI=` and an unset GITLAB_CI are all "not GitLab".
"""

from __future__ import annotations

from collections.abc import Mapping

GITHUB = "GitHub Actions"
GITLAB = "GitLab CI"
CIRCLECI = "CircleCI"
BUILDKITE = "Buildkite"
AZURE = "Azure Pipelines"
BITBUCKET = "Bitbucket Pipelines"
JENKINS = "Jenkins"

_TRUE = frozenset({"true", "1", "yes", "on"})

# In order: the first provider whose sign is present wins. A flag must be true; a value (a build
# number, a URL) only needs to be set.
_FLAGS: tuple[tuple[str, str], ...] = (
    (GITHUB, "GITHUB_ACTIONS"),
    (GITLAB, "GITLAB_CI"),
    (CIRCLECI, "CIRCLECI"),
    (BUILDKITE, "BUILDKITE"),
    (AZURE, "TF_BUILD"),  # Azure sets it to "True"
)
_VALUES: tuple[tuple[str, str], ...] = (
    (BITBUCKET, "BITBUCKET_BUILD_NUMBER"),
    (BITBUCKET, "BITBUCKET_COMMIT"),
    (JENKINS, "JENKINS_URL"),
    (JENKINS, "JENKINS_HOME"),
)


def truthy(value: str | None) -> bool:
    """A boolean CI variable: true (any case), 1, yes, on. false, 0, empty and unset are false."""
    return value is not None and value.strip().lower() in _TRUE


def detect(environ: Mapping[str, str]) -> str | None:
    """The CI provider this process runs in (GITHUB, GITLAB, ...), or None outside CI."""
    for provider, name in _FLAGS:
        if truthy(environ.get(name)):
            return provider
    for provider, name in _VALUES:
        if environ.get(name, "").strip():
            return provider
    return None


def in_ci(environ: Mapping[str, str]) -> bool:
    """True in any CI job: a known provider, or the CI=true most others set. No live terminal line."""
    return detect(environ) is not None or truthy(environ.get("CI"))
