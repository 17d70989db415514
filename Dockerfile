# testsession in a container: `docker run --rm -v "$PWD:/workspace" IMAGE run testsession.yml`
# (API key and account from -e TESTSESSION_API_KEY -e TESTSESSION_ACCOUNT_ID -e TESTSESSION_BASE_URL).
# Only packages are fetched: Debian's git and the Python dependencies from PyPI.
FROM python:3.12-slim-bookworm

LABEL org.opencontainers.image.title="testsession" \
      org.opencontainers.image.description="Run monitoring checks as a test session against a new build and gate the deploy." \
      org.opencontainers.image.licenses="MIT"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git: gitpython reads the commit metadata of the mounted repository. A mounted workspace belongs to
# another user (the host's, or the CI runner's), which git refuses ("dubious ownership") unless the
# directory is marked safe; --system so that it holds for any --user the container is started as.
# Debian's git is not version-pinned: the base tag already fixes the release, and a pinned point
# version disappears from the mirrors with the next security update.
# apt-get clean: the downloaded packages stay in /var/cache/apt on a base without Debian's docker-clean
# hook (138 MB measured on the stand-in base); a no-op on the official image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

# .dockerignore lets only the package through (pyproject.toml, README.md, runner/).
COPY . /src
RUN pip install --no-cache-dir /src \
    && rm -rf /src

# uid 1001 is the GitHub-hosted runner's user: files written into a mounted workspace stay theirs.
# USER by number: Kubernetes' runAsNonRoot can only verify a numeric user.
RUN groupadd --gid 1001 testsession \
    && useradd --create-home --uid 1001 --gid 1001 --shell /usr/sbin/nologin testsession \
    && install -d -o 1001 -g 1001 /workspace
USER 1001:1001
WORKDIR /workspace

ENTRYPOINT ["testsession"]
CMD ["run"]
