"""pytest glue for the functional tests: the kvmhost harness on sys.path and
a report of every bench retry at the end of the session."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import kvmhost  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    if kvmhost.RETRIES:
        terminalreporter.section("bench retries (each ran once more; second result final)")
        for name, reason in kvmhost.RETRIES:
            terminalreporter.write_line(f"RETRIED {name}: {reason}")
