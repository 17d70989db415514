"""The state file (`--state`): what earlier runs left (error groups, analyses, sessions), read and
written by a local run (runner/job/local.py) and by the emulator alike. See store.py."""
