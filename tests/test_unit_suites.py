"""Each meson unit-test suite (tests/unit, GLib GTest) as one pytest test, so
that `make check` reports every layer in one summary."""

import subprocess
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parents[1] / "build"


def unit_suites():
    if not (BUILD / "build.ninja").exists():
        return ["(not built)"]
    out = subprocess.run(["meson", "test", "-C", str(BUILD), "--list", "--no-rebuild"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.strip().startswith("test-")]


@pytest.mark.parametrize("suite", unit_suites())
def test_unit_suite(suite):
    assert suite != "(not built)", "run make first"
    run = subprocess.run(["meson", "test", "-C", str(BUILD), "--no-rebuild", "--print-errorlogs",
                          suite], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 0, run.stdout
