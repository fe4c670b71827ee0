"""The bench harness on a real nested L1 (skipped where guests run directly):
an L1 whose kernel reports a soft lockup is given up at once, not at its
fragment's limit, with the console's evidence; an L1 is ended with its
harness, even when the harness is killed; and no outer QEMU survives."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import kvmhost
from kvmhost import l1
from kvmhost.output import line_value

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
                 limit=900, kit=kvmhost.kit_dir())
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
    import kvmhost
    from kvmhost import l1
    l1.end_all_on_exit()
    print(l1.TAG, flush=True)
    frags = [kvmhost.Fragment(name, "sleep 600", "/bin/true", limit=600) for name in ("a", "b")]
    kvmhost.run_batch(frags, mode="nested", logdir={logs!r})
""")


def outer_qemus(tag):
    """The outer QEMUs among the processes named for tag (timeout's too)."""
    return [pid for pid in l1.surviving_l1s(tag)
            if Path(f"/proc/{pid}/comm").read_text().startswith("qemu-system")]


def test_l1_hosts_end_with_a_harness_killed_by_sigterm(tmp_path):
    """Two L1 hosts running a batch side by side (one per core) end when
    their harness gets SIGTERM, not when their batches would have."""
    script = CHILD.format(functional=str(Path(__file__).parent), logs=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, VMM_TEST_L1_PARALLEL="2"))
    tag = child.stdout.readline().strip()
    try:
        deadline = time.monotonic() + 60
        while len(outer_qemus(tag)) < 2 and time.monotonic() < deadline:
            time.sleep(1)
        assert len(outer_qemus(tag)) == 2, "the two outer QEMUs never started"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 128 + signal.SIGTERM
        assert l1.surviving_l1s(tag) == []
    finally:
        if child.poll() is None:
            child.kill()
        for pid in l1.surviving_l1s(tag):      # a failed check leaves none behind
            os.kill(pid, signal.SIGKILL)


# IRQ 0's count in L1, two seconds apart (the PIT's interrupts, see
# scripts/guest/init-l1: pit_safety_net).
PIT_TICKS = ("a=$(awk '$1 == \"0:\" { print $2 }' /proc/interrupts); sleep 2; "
             "b=$(awk '$1 == \"0:\" { print $2 }' /proc/interrupts); echo \"PIT_TICKS=$((b - a))\"")


def test_l1_pit_ticks_to_recover_lost_interrupts(tmp_path):
    """L1's PIT interrupts 18.2 times a second: an outside interrupt that
    makes the outer APIC raise a request its TCG CPU lost (docs/testing.md,
    "The lost interrupt")."""
    got = kvmhost.run_batch([kvmhost.Fragment("pit", PIT_TICKS, "/bin/true", limit=60)],
                            mode="nested", logdir=tmp_path)["pit"]
    # 36 in two seconds; an L1 sharing a loaded machine loses some time.
    assert int(line_value(got.output, "PIT_TICKS")) >= 18, got.output
