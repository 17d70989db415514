# testsession in a container: `docker run --rm -v "$PWD:/workspace" IMAGE run testsession.yml`
# (API key and account from -e TESTSESSION_API_KEY -e TESTSESSION_ACCOUNT_ID -e TESTSESSION_BASE_URL),
# or your checks against a build the container reaches: `docker run --rm --network host
# -v "$PWD:/workspace" IMAGE run --checks checks.yml`. Every check type runs in it, browser checks too
# (Node, Chromium and the Playwright the engine would fetch are in the image; a run needs no network
# beyond its target).
# Only packages are fetched: Debian's (git, Node, Chromium, tini), the Python dependencies from PyPI
# and @playwright/test from npm.
FROM python:3.12-slim-bookworm

LABEL org.opencontainers.image.title="testsession" \
      org.opencontainers.image.description="Run monitoring checks as a test session against a new build and gate the deploy." \
      org.opencontainers.image.licenses="MIT"

# XDG_CACHE_HOME: where the engine looks for the Playwright of a browser check's runtime
# ($XDG_CACHE_HOME/testsession/playwright-<version>), installed below; not a user's home, so that it
# is found whatever --user the container runs as.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    XDG_CACHE_HOME=/opt/testsession/cache

# git: it gives the commit metadata of the mounted repository. A mounted workspace belongs to
# another user (the host's, or the CI runner's), which git refuses ("dubious ownership") unless the
# directory is marked safe; --system so that it holds for any --user the container is started as.
# Debian's git is not version-pinned: the base tag already fixes the release, and a pinned point
# version disappears from the mirrors with the next security update.
# nodejs, npm, chromium: BROWSER, MULTI_STEP and PLAYWRIGHT checks run @playwright/test on Node with
# the machine's Chromium (docs/checks.md, "Browser"); npm installs the Playwright of another runtimeId
# when a check names one (with network). tini: PID 1 must reap the orphans re-parented to it (a
# browser's detached helpers, chrome_crashpad_handler) and forward signals: `testsession` is not an init.
# /etc/chromium.d: Debian's chromium script reads its flags from there. Chromium's own sandbox needs
# user namespaces or a setuid helper, which a container (and Kubernetes' no-new-privileges) does not
# give a non-root user: the container is the sandbox (as Playwright's own images run it).
# apt-get clean: the downloaded packages stay in /var/cache/apt on a base without Debian's docker-clean
# hook (138 MB measured on the stand-in base); a no-op on the official image.
# hadolint ignore=DL3008,SC2016
RUN apt-get update \
    && apt-get install -y --no-install-recommends git nodejs npm chromium tini \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*' \
    && echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox"' > /etc/chromium.d/testsession-container

# .dockerignore lets only the package through (pyproject.toml, README.md, runner/).
COPY . /src
RUN pip install --no-cache-dir /src \
    && rm -rf /src

# The Playwright a browser check of the default runtime needs, installed by the engine's own code into
# the cache it reads (so the version and place are the engine's): no npm at run time. The cache is
# the image user's (it may install another runtime's there), readable by any --user.
# NODE_EXTRA_CA_CERTS: npm trusts the system's certificates too (a build behind a TLS proxy).
RUN NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt python -c "import time; from pathlib import Path; \
from runner.checks.protocols.browser.setup import find_playwright; \
print(find_playwright(Path('/nonexistent'), None, progress=print, deadline=time.monotonic() + 600, stop=None))" \
    && rm -rf /root/.npm "$XDG_CACHE_HOME"/testsession/.playwright-*.lock \
    && chown -R 1001:1001 /opt/testsession

# uid 1001 is the GitHub-hosted runner's user: files written into a mounted workspace stay theirs.
# USER by number: Kubernetes' runAsNonRoot can only verify a numeric user.
RUN groupadd --gid 1001 testsession \
    && useradd --create-home --uid 1001 --gid 1001 --shell /usr/sbin/nologin testsession \
    && install -d -o 1001 -g 1001 /workspace
USER 1001:1001
WORKDIR /workspace

ENTRYPOINT ["tini", "--", "testsession"]
CMD ["run"]
