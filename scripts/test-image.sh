#!/usr/bin/env bash
# Builds the image with podman and runs its tests (tests/test_image.py) in one command:
#   scripts/test-image.sh              # set podman up if needed (1-5 min once), build, test
#   scripts/test-image.sh --if-ready   # only where podman and the base image are already set up (.ci/run)
#   scripts/test-image.sh --if-ready --image-only   # only tests/test_image.py (.ci/run: the rest runs in venvs)
# The set-up is ../shared/container/podman-here.sh (or $PODMAN_HERE): podman from Debian's packages,
# configured for this kind of machine, and a stand-in for the base image built from Debian's packages,
# since there is no registry to pull python:3.12-slim-bookworm from. Extra arguments go to pytest.
# Exit 3: podman is not (or cannot be) set up here; otherwise pytest's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
setup=${PODMAN_HERE:-../shared/container/podman-here.sh}
base=docker.io/library/python:3.12-slim-bookworm
if_ready=false
if [ "${1:-}" = "--if-ready" ]; then if_ready=true; shift; fi
# --image-only: the image's own tests (.ci/run replays the Dockerfile's install and the GitLab job apart)
tests="tests/test_image.py tests/test_ci_docker.py tests/test_ci_gitlab_copied.py"
if [ "${1:-}" = "--image-only" ]; then tests="tests/test_image.py"; shift; fi

if [ ! -f "$setup" ]; then
    echo "test-image: no podman set-up script at $setup (set PODMAN_HERE)" >&2
    exit 3
fi
if $if_ready && ! { command -v podman >/dev/null && podman image exists "$base"; }; then
    echo "test-image: podman or the base image is not set up on this machine (run scripts/test-image.sh)" >&2
    exit 3
fi
started=$(date +%s)
if ! exports=$(bash "$setup"); then
    echo "test-image: podman could not be set up here (see above)" >&2
    exit 3
fi
eval "$exports"
echo "test-image: podman set up in $(( $(date +%s) - started )) s"
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
# shellcheck disable=SC2086
exec "$python" -m pytest -q -n 0 -m container -rs --durations=5 $tests "$@"
