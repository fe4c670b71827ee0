"""The bench harness on a real nested L1 (skipped where guests run directly):
an L1 whose kernel reports a soft lockup is given up at once, not at its
fragment's limit, with the console's evidence; an L1 is ended with its
harness, even when the harness is killed; and no outer QEMU survives."""

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import kvmhost
from kvmhost import l1

pytestmark = pytest.mark.skipif(kvmhost.host_mode() != "nested",
                                reason="guests run directly here: there is no L1 to watch")

# What the kernel prints at a soft lockup, written into L1's kernel log at
# emergency level as the kernel's watchdog would (a real one cannot be
# caused on purpose).
FAKE_LOCKUP = ("echo '<0>watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [bench-test:1]' "
               "> /dev/kmsg; sleep 600")


def write_batch(directory, script, limit):
    frag = kvmhost.Fragment("lockup", script, "/bin/true", limit=limit)
    kvmhost._write_batch([frag], directory, lambda vmm: vmm)
    return {frag.name: limit}


def test_soft_lockup_gives_up_l1_at_once_and_leaves_no_outer_qemu(tmp_path):
    limits = write_batch(tmp_path / "batch", FAKE_LOCKUP, limit=600)
    started = time.monotonic()
    run = l1.run(tmp_path / "batch", limits, tmp_path / "l1", {"true": "/bin/true"},
                 limit=900)
    took = time.monotonic() - started
    assert "soft lockup - CPU#1 stuck" in run.fate, run
    assert "bench-test" in run.evidence
    # Boot plus the grace, far from the fragment's 600 s.
    assert took < 300, f"gave up after {took:.0f} s"
    assert run.outcomes["lockup"].rc is None
    assert l1.surviving_l1s() == []


CHILD = textwrap.dedent("""\
    import sys
    sys.path.insert(0, {functional!r})
    from pathlib import Path
    from kvmhost import l1
    l1.end_all_on_exit()
    print(l1.TAG, flush=True)
    l1.run(Path({batch!r}), {{"lockup": 600}}, Path({logs!r}), {{"true": "/bin/true"}}, limit=900)
""")


def test_l1_ends_with_a_harness_killed_by_sigterm(tmp_path):
    write_batch(tmp_path / "batch", "sleep 600", limit=600)
    script = CHILD.format(functional=str(Path(__file__).parent), batch=str(tmp_path / "batch"),
                          logs=str(tmp_path / "l1"))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    tag = child.stdout.readline().strip()
    try:
        deadline = time.monotonic() + 60
        while not l1.surviving_l1s(tag) and time.monotonic() < deadline:
            time.sleep(1)
        assert l1.surviving_l1s(tag), "the outer QEMU never started"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
    assert l1.surviving_l1s(tag) == []
