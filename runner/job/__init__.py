"""The job: one run from its sessions to the verdict, whatever the results come from.

Where to start reading (docs/architecture.md, "One API check, from the file to the exit code"):
- source.py: `ResultSource`, the port between the job and where results come from;
- local.py (with local_groups.py): a checks file's checks run by the engine (runner/checks/) in
  this process; remote.py (with session.py, analyses.py, verdicts.py): the service through the
  client, a real account or the emulator;
- run.py: the `Runner` (a thread per session, the events handed to the observers, signals and the
  deadline) and `judge()`, the one path to a verdict;
- events.py: what a run reports while it works; policy.py: the gate and the exit code;
- outcome.py: what the reports render and results.json stores; digest.py: what every output shows.
"""
