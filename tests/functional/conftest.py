"""pytest glue for the functional tests: the kvmhost harness on sys.path, a
report of every bench retry and lost L1 at the end of the session, and no
bench L1 left running after it, however it ends."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import kvmhost  # noqa: E402
import session_batch  # noqa: E402
from kvmhost import l1  # noqa: E402

l1.end_all_on_exit()


# How the harness runs every later batch (kvmhost, scripts/run-in-l1.sh).
HARNESS_SETTINGS = ("VMM_TEST_HOST", "VMM_TEST_L1_PARALLEL", "VMM_TEST_NET", "BENCH_L1_SMP",
                    "BENCH_L1_ACCEL", "BENCH_L1_CPU", "BENCH_L1_APPEND", "BENCH_OUTER_QEMU")


@pytest.fixture(autouse=True)
def harness_settings_unchanged():
    """A test that changes the harness's settings in this process and leaves
    them changed would silently reshape every batch after it (one L1 instead
    of two cost six minutes once): it fails instead."""
    before = {name: os.environ.get(name) for name in HARNESS_SETTINGS}
    yield
    after = {name: os.environ.get(name) for name in HARNESS_SETTINGS}
    assert after == before, "the test left the harness's environment changed"


# The modules taking part in the session's one bench batch, and the ids of
# their selected tests: set once the session's tests are chosen.
SELECTED = {}


def pytest_collection_finish(session):
    SELECTED["modules"] = session_batch.bench_modules(session.items)
    SELECTED["ids"] = session_batch.selected_ids(session.items)


@pytest.fixture(scope="session")
def bench_runs(our_vmm, tmp_path_factory):
    """Every selected bench module's fragments, run in one batch
    (session_batch.py); each module reads them as its runs fixture."""
    return session_batch.run(SELECTED["modules"], session_batch.Session(
        our_vmm, tmp_path_factory, SELECTED["ids"]))


@pytest.fixture(scope="module")
def runs(request, bench_runs):
    """{fragment name: Outcome} for a module with a bench_batch, from the
    session's one batch. A module whose guests run another way (tiny guests
    on the local /dev/kvm) defines its own runs."""
    return bench_runs.of(request.module)


def pytest_sessionfinish():
    l1.end_all()


def pytest_terminal_summary(terminalreporter):
    if kvmhost.L1_LOSSES:
        terminalreporter.section("bench L1 hosts lost (their fragments were retried)")
        for log, why, evidence in kvmhost.L1_LOSSES:
            terminalreporter.write_line(f"L1 {log}: {why}")
            for line in evidence.splitlines()[-8:]:
                terminalreporter.write_line(f"    {line}")
    if kvmhost.GROUP_TIMES:
        terminalreporter.section("bench groups by wall time (L1 boot included), fragments' seconds")
        for log, wall, fragments in sorted(kvmhost.GROUP_TIMES, key=lambda g: -g[1]):
            spent = ", ".join(f"{name} {'?' if secs is None else secs}"
                              for name, secs in sorted(fragments.items(),
                                                       key=lambda f: -(f[1] or 0)))
            terminalreporter.write_line(f"{wall:6.0f} s  {log}: {spent}")
    if kvmhost.RETRIES:
        terminalreporter.section("bench retries (each ran once more; second result final)")
        for name, reason in kvmhost.RETRIES:
            terminalreporter.write_line(f"RETRIED {name}: {reason}")


@pytest.fixture(scope="session")
def tiny_kernels():
    """Directory with the tiny multiboot guests (tests/functional/tiny)."""
    out = kvmhost.REPO / "build" / "tiny"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(kvmhost.REPO / "tests/functional/tiny"),
                    f"OUT={out}"], check=True)
    return out


@pytest.fixture(scope="session")
def our_vmm():
    """Our qemu-system-x86_64, built by `make` (make check builds it first)."""
    vmm = kvmhost.REPO / "build" / "qemu-system-x86_64"
    assert vmm.exists(), f"{vmm} is missing: run make first"
    return str(vmm)


@pytest.fixture(params=["ours", "reference"])
def vmm(request, our_vmm):
    """Our VMM, then Debian's qemu-system-x86_64 (the reference column), for
    the tests that run one scenario on both; a module may define its own."""
    if request.param == "reference":
        reference = shutil.which("qemu-system-x86_64", path="/usr/bin")
        if not reference:
            pytest.skip("Debian's qemu-system-x86_64 is not installed")
        return reference
    return our_vmm
