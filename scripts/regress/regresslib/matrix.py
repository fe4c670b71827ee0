"""The regression matrix: which guests boot, in which order, and running
them on the bench with a progress line.

A run is one L2 boot: one device, one vCPU count, one VMM configuration
(ours with device-lock=on or off, or the reference QEMU), in one round. It
yields several figures (a workload measures more than one thing per boot).
Runs are ordered round by round, and inside a round the configurations
alternate (device x VMM), so that whatever disturbs the machine for a
while hits every configuration alike rather than one column.

Every (round, vCPU count) is a batch of its own, in a fresh L1 with as many
vCPUs as the guest (capped at the host's cores): an L1 lost to the bench's
hang (docs/testing.md, "Still open"; issue 8) costs the rest of that batch
only, the harness reruns what did not come back (kvmhost's retry policy),
and the next batch starts anew. A run that still gives no result is a
recorded failure, never the end of the script.
"""

import contextlib
import dataclasses
import os
import re
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402

OURS = str(REPO / "build/qemu-system-x86_64")
REFERENCE = "/usr/bin/qemu-system-x86_64"

# VMM configuration: (binary, -machine option). Ours logs guest errors:
# a guest that resets mid-run then says whether it was a triple fault.
VMMS = {
    "ours-on": (OURS, "-machine pc,device-lock=on,lock-stats=on -d guest_errors"),
    "ours-off": (OURS, "-machine pc,device-lock=off,lock-stats=on -d guest_errors"),
    # What the I/O threads' scheduling policy buys (docs/design.md): only
    # when asked for, --vmms.
    "ours-nobatch": (OURS, "-machine pc,device-lock=on,io-sched-batch=off,lock-stats=on "
                           "-d guest_errors"),
    # What huge pages under guest RAM buy (docs/design.md): only when asked.
    "ours-nothp": (OURS, "-machine pc,device-lock=on,x-ram-thp=off,lock-stats=on "
                         "-d guest_errors"),
    "qemu": (REFERENCE, "-machine pc"),
}
DEFAULT_VMMS = ["ours-on", "ours-off", "qemu"]


@dataclasses.dataclass(frozen=True)
class Run:
    round: int
    device: str
    vcpus: int
    vmm: str
    seq: int = 0            # the run's place in the plan

    @property
    def name(self):
        # Fragment names become file names, and the bench runs a batch's
        # fragments in the order of their names: the place comes first.
        return f"{self.seq:03}_r{self.round}_{self.device}_{self.vcpus}_{self.vmm}"

    @property
    def binary(self):
        return VMMS[self.vmm][0]

    @property
    def machine(self):
        return VMMS[self.vmm][1]


def plan(rounds, devices, vcpus, vmms):
    """Every run of the matrix, in the order they run: by round, then vCPU
    count (one L1 each), then device and VMM alternating."""
    order = [(r, device, n, vmm) for r in range(rounds) for n in vcpus
             for device in devices for vmm in vmms]
    return [Run(*run, seq=i) for i, run in enumerate(order)]


def batches(runs):
    """runs grouped by (round, vCPUs), each group one L1 boot, in order."""
    groups = {}
    for run in runs:
        groups.setdefault((run.round, run.vcpus), []).append(run)
    return list(groups.values())


def usable_vcpus(wanted, cores=None):
    """The vCPU counts this host can give a guest (no more than its cores:
    an overcommitted L1 measures the scheduler), and those it cannot."""
    cores = cores or os.cpu_count() or 1
    return [n for n in wanted if n <= cores], [n for n in wanted if n > cores]


class Progress:
    """A line on stderr while the matrix runs: what runs now, how many runs
    of how many are done, time elapsed and an estimate of the time left.
    It reads the batch logs as they grow (the harness frames each run with
    @@TEST-BEGIN / @@TEST-END), so it needs nothing from the harness."""

    BEGIN = re.compile(r"^@@TEST-BEGIN (\S+)", re.M)
    END = re.compile(r"^@@TEST-END (\S+)", re.M)

    def __init__(self, logdir, total, out=sys.stderr, every=5.0):
        self.logdir, self.total, self.out, self.every = Path(logdir), total, out, every
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def state(self):
        """(names done, name running or None) from the logs so far."""
        done, running = set(), None
        for log in sorted(self.logdir.glob("*.data.log"), key=lambda p: p.stat().st_mtime):
            text = log.read_text(errors="replace")
            done.update(self.END.findall(text))
            begun = self.BEGIN.findall(text)
            if begun and begun[-1] not in done:
                running = begun[-1]
        return done, running

    def line(self, now=None):
        done, running = self.state()
        return format_progress(len(done), self.total, running,
                               (now or time.monotonic()) - self.start)

    def _loop(self):
        tty = self.out.isatty()
        while not self._stop.wait(self.every if tty else self.every * 6):
            self.out.write(("\r\033[K" if tty else "") + self.line() + ("" if tty else "\n"))
            self.out.flush()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        if self.out.isatty():
            self.out.write("\n")


def format_progress(done, total, running, elapsed):
    """'[3/12] 003_r0_ide_1_ours-on, 4:10 elapsed, about 12:30 left'."""
    left = "estimate after the first run"
    if done:
        left = f"about {clock(elapsed / done * max(total - done, 0))} left"
    now = running or "booting L1"
    return f"[{min(done, total)}/{total}] {now}, {clock(elapsed)} elapsed, {left}"


def clock(seconds):
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def execute(workload, runs, logdir, l1_vcpus=None):
    """Run every run on the bench; {Run: Outcome or None}. One L1 per
    batch (batches()), one L1 at a time: a measurement wants the machine.
    A nested L1 gets l1_vcpus, or by default as many as the batch's guests
    have (up to the host's cores)."""
    mode = kvmhost.host_mode()
    cores = os.cpu_count() or 1
    outcomes = {}
    with Progress(logdir, len(runs)):
        for group in batches(runs):
            frags = [workload.fragment(run) for run in group]
            with bench_environment(VMM_TEST_L1_PARALLEL="1",
                                   BENCH_L1_SMP=str(l1_vcpus or min(group[0].vcpus, cores))):
                got = kvmhost.run_batch(frags, mode=mode, logdir=logdir, files=workload.files)
            outcomes.update({run: got.get(run.name) for run in group})
    return outcomes


@contextlib.contextmanager
def bench_environment(**values):
    """The harness reads how many L1 hosts to run and their vCPUs from the
    environment; set them for one batch and put back what was there, so a
    caller in the same process (the test suite) keeps its own settings."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
