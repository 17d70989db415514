#!/usr/bin/env bash
# A pre-deploy gate: run the checks against the build that is about to be promoted, and deploy only
# when they pass. Works in any CI or from a laptop:
#
#   TESTSESSION_API_KEY=... TESTSESSION_ACCOUNT_ID=... TESTSESSION_BASE_URL=... \
#     examples/pre-deploy-gate.sh testsession.yml -- ./deploy.sh production
#
#   examples/pre-deploy-gate.sh examples/testsession.yml --emulator -- echo deploying   # demo
#
# Everything before `--` goes to `testsession run`; everything after it is the deploy command,
# run only when the gate passes. The simplest form of the same gate is one line:
#
#   testsession run testsession.yml && ./deploy.sh production
#
# The exit-code contract (`testsession --help`):
#   0    every check passed (degraded checks pass unless gate.failOnDegraded)   -> deploy
#   1    a check failed the gate (failed, error, cancelled, did not finish;    -> do not deploy
#        degraded only with gate.failOnDegraded)
#   2    usage: bad arguments or spec; nothing was triggered                    -> fix the pipeline
#   3    timeout: the sessions did not finish in wait.timeoutSeconds; cancelled  -> do not deploy
#   4    the service could not be used (auth, network, server errors)           -> do not deploy
#   5    no check matched the target (0 with gate.failOnNoMatchingChecks: false) -> do not deploy
#   6    the build did not start (--build-command, --build-url)                 -> do not deploy
#   130  interrupted (SIGINT), 143 terminated (SIGTERM): sessions cancelled     -> do not deploy
# This script passes the code through (the deploy command's own code when it ran), so the caller
# can tell "the checks failed" (1) from "the gate could not decide" (2-6, 130, 143).
set -uo pipefail

run_args=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    run_args+=("$1")
    shift
done
if [ "$#" -gt 0 ]; then shift; fi   # the `--`
deploy=("$@")

# Flags after which `testsession run` exits 0 without judging any check: never a gate.
for arg in ${run_args[@]+"${run_args[@]}"}; do
    case "$arg" in
        --detach|-h|--help|--version)
            echo "pre-deploy gate: $arg exits 0 before any check is judged; not deploying" >&2
            exit 2 ;;
    esac
done

testsession run ${run_args[@]+"${run_args[@]}"}   # (bash 3.2 safe when empty)
code=$?

case "$code" in
    0) echo "pre-deploy gate: passed" ;;
    1) echo "pre-deploy gate: checks failed; not deploying (see testsession-reports/summary.md)" >&2 ;;
    3) echo "pre-deploy gate: the checks did not finish in time; not deploying" >&2 ;;
    4) echo "pre-deploy gate: the monitoring service could not be used; not deploying" >&2 ;;
    5) echo "pre-deploy gate: no check matched the target; not deploying" >&2 ;;
    6) echo "pre-deploy gate: the build did not start; not deploying" >&2 ;;
    *) echo "pre-deploy gate: testsession exited $code; not deploying" >&2 ;;
esac
if [ "$code" -ne 0 ]; then
    exit "$code"
fi
if [ "${#deploy[@]}" -gt 0 ]; then
    exec "${deploy[@]}"
fi
