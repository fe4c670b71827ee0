"""Run functional tests "on a KVM host".

A test is a shell fragment (see hostlib.sh for what it can call) that boots
guests with the VMM under test and runs host-side tools beside them. Where
the local /dev/kvm is hardware-backed (kvm_intel or kvm_amd loaded) the
fragments run here, each batch inside a network namespace of its own; where
it is not (kvm_pvm cannot boot Linux), they run inside the nested bench host
L1 (scripts/run-in-l1.sh). VMM_TEST_HOST=direct|nested forces either way.

Fragments are batched: one L1 boot runs a whole list of them. The batch's
output is parsed back into one Outcome per fragment, with each guest's
console log, so that the Python tests decide pass or fail.

Retry policy (the nested bench has hangs of its own, about one two-vCPU L2
boot in fifty): a fragment whose result never came back (L1 hung or died),
one whose guest was killed at its time limit without a kernel panic, or one
whose guest ended before its system was up (Fragment.up_marker) without a
panic, is run once more in a second batch. If its host died again, it gets
a third batch; otherwise the second result is final. Every retry is
recorded (Outcome.retried, RETRIES) and printed at the end of the test
session, so CI never turns green or red by luck without saying so. A guest
that ends wrongly (panic, wrong output, wrong status) is never retried.
"""

import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HOSTLIB = Path(__file__).with_name("hostlib.sh")
SCRIPTS = REPO / "scripts"

# Every retry made in this process, as (fragment name, reason).
RETRIES = []


def host_mode():
    """'direct' when the local /dev/kvm can run Linux guests, else 'nested'."""
    forced = os.environ.get("VMM_TEST_HOST", "auto")
    if forced in ("direct", "nested"):
        return forced
    if forced != "auto":
        raise ValueError(f"VMM_TEST_HOST={forced}: use direct, nested or auto")
    hardware = any(Path("/sys/module", m).exists() for m in ("kvm_intel", "kvm_amd"))
    usable = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return "direct" if hardware and usable else "nested"


def kit_dir():
    """The guest kit directory, built (or found up to date) on first use."""
    out = subprocess.run([str(SCRIPTS / "build-guest-kit.sh"), "--print-dir"],
                         check=True, stdout=subprocess.PIPE, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


@dataclasses.dataclass
class Fragment:
    """One test: a shell script run on the KVM host with $VMM set to vmm."""
    name: str
    script: str
    vmm: str
    limit: int = 300
    # A fragment that expects its guest to be killed at the limit must not
    # be retried for it.
    retry_on_timeout: bool = True
    # What a guest prints once its system is up. A guest that ended without
    # it and without a panic died in early boot, which the nested bench
    # does on its own now and then (an L2 that resets before its kernel
    # prints anything, under either VMM): retried once. None: no such check.
    up_marker: str | None = "KIT-READY"


@dataclasses.dataclass
class Guest:
    name: str
    rc: int
    log: str
    killed: bool

    def kit_exit(self):
        """The status the L2 kit's init printed for its command, or None."""
        found = re.findall(r"^KIT-EXIT=(\d+)$", self.log, re.M)
        return int(found[-1]) if found else None

    def panicked(self):
        return "Kernel panic" in self.log


@dataclasses.dataclass
class Outcome:
    name: str
    rc: int | None          # None: the fragment's end never came back
    output: str             # everything the fragment printed
    guests: dict
    retried: str | None = None

    def guest(self, name):
        if name not in self.guests:
            raise AssertionError(f"test {self.name}: guest {name} never ran\n"
                                 f"--- test output ---\n{self.output}")
        return self.guests[name]


_FRAME = re.compile(r"^@@TEST-BEGIN (\S+)\n(.*?)^@@TEST-END \1 rc=(\d+)$", re.S | re.M)
_BEGIN = re.compile(r"^@@TEST-BEGIN (\S+)$", re.M)
_GUEST = re.compile(r"^@@GUEST-BEGIN (\S+)\n(.*?)^@@GUEST-END \1 rc=(\d+)( killed=\S+)?$",
                    re.S | re.M)


def parse_batch(text):
    """Outcomes of the fragments framed in a batch's output."""
    text = text.replace("\r", "")
    outcomes = {}
    for name, body, rc in _FRAME.findall(text):
        outcomes[name] = Outcome(name, int(rc), body, _parse_guests(body))
    # A fragment that began but never ended: keep what it printed.
    for begin in _BEGIN.finditer(text):
        name = begin.group(1)
        if name not in outcomes:
            body = text[begin.end() + 1:].split("@@TEST-BEGIN")[0]
            outcomes[name] = Outcome(name, None, body, _parse_guests(body))
    return outcomes


def _parse_guests(body):
    return {name: Guest(name, int(rc), log, bool(killed))
            for name, log, rc, killed in _GUEST.findall(body)}


def _write_batch(fragments, directory, vmm_path_in_host):
    directory.mkdir(parents=True, exist_ok=True)
    for frag in fragments:
        (directory / f"{frag.name}.sh").write_text(frag.script + "\n")
        (directory / f"{frag.name}.env").write_text(
            f"VMM={shlex.quote(vmm_path_in_host(frag.vmm))}\nLIMIT={frag.limit}\n")


def _run_nested(fragments, workdir, log, files):
    names = {vmm: f"vmm{i}" for i, vmm in enumerate(sorted({f.vmm for f in fragments}))}
    batch = workdir / "batch"
    _write_batch(fragments, batch, lambda vmm: f"/bench/bin/{names[vmm]}")
    limit = 120 + sum(f.limit for f in fragments)
    cmd = [str(SCRIPTS / "run-in-l1.sh"), "--tests", str(batch), "--limit", str(limit),
           "--log", str(log)]
    for vmm, name in names.items():
        cmd += ["--vmm", f"{name}={vmm}"]
    for name, path in files.items():
        cmd += ["--vmm", f"{name}={path}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _watch_l1(proc, log, {f.name: f.limit for f in fragments})
    return log.read_text(errors="replace") if log.exists() else ""


# L1 enforces every fragment's limit itself, so a console that stays silent
# longer than that is a hung L1 (seen on the bench): end it then, rather
# than at the whole batch's limit, and let the retry policy rerun what was
# lost.
L1_QUIET_LIMIT = 300        # seconds: boot to the first fragment, or between fragments
FRAGMENT_SLACK = 60         # seconds past a fragment's own limit


def _allowed_silence(console, limits):
    """How long L1 may stay silent after the last fragment event on its console."""
    events = re.findall(r"^@@TEST-(BEGIN|END) (\S+)", console, re.M)
    if events and events[-1][0] == "BEGIN":
        return limits.get(events[-1][1], 0) + FRAGMENT_SLACK
    return L1_QUIET_LIMIT


def _watch_l1(proc, log, limits):
    seen, last_change = None, time.monotonic()
    while proc.poll() is None:
        time.sleep(2)
        console = log.read_text(errors="replace") if log.exists() else ""
        if console != seen:
            seen, last_change = console, time.monotonic()
        elif time.monotonic() - last_change > _allowed_silence(console, limits):
            # TERM first: run-in-l1.sh's exit trap removes its work directory.
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _run_direct(fragments, workdir, log, files):
    batch = workdir / "batch"
    _write_batch(fragments, batch, lambda vmm: vmm)
    file_dir = workdir / "files"
    file_dir.mkdir()
    for name, path in files.items():
        (file_dir / name).symlink_to(Path(path).resolve())
    env = dict(os.environ, KIT=str(kit_dir() / "l2"), BENCH_HOSTLIB=str(HOSTLIB),
               BENCH_WORK=str(workdir / "work"), BENCH_FILES=str(file_dir))
    runner = f'. "$BENCH_HOSTLIB"; bench_run_all {shlex.quote(str(batch))}'
    namespace = None
    cmd = ["sh", "-c", runner]
    if os.geteuid() == 0 and shutil.which("ip"):
        # Guests' network traffic stays inside a namespace made for the batch.
        namespace = f"vmmbench{os.getpid()}"
        subprocess.run(["ip", "netns", "add", namespace], check=True)
        subprocess.run(["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"],
                       check=True)
        cmd = ["ip", "netns", "exec", namespace] + cmd
    limit = 60 + sum(f.limit for f in fragments)
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
    finally:
        if namespace:
            subprocess.run(["ip", "netns", "del", namespace])
    return log.read_text(errors="replace")


HOST_DIED = "its result never came back (the host hung or died)"


def _needs_retry(frag, outcome):
    if outcome is None or outcome.rc is None:
        return HOST_DIED
    if outcome.rc == 137 and frag.retry_on_timeout:
        return "it was killed at its time limit"
    for guest in outcome.guests.values():
        if guest.killed and not guest.panicked() and frag.retry_on_timeout:
            return f"guest {guest.name} was killed at its time limit"
        if frag.up_marker and frag.up_marker not in guest.log and not guest.panicked():
            return f"guest {guest.name} ended in early boot (VMM status {guest.rc})"
    return None


def _retry_reason(frag, outcome, attempt):
    """Why frag runs again after this attempt, or None. A fragment gets one
    rerun for any reason _needs_retry names; one whose host died gets a
    second: L1's own kernel crashes now and then under this load (docs/
    testing.md), and that says nothing about the VMM under test."""
    reason = _needs_retry(frag, outcome)
    if attempt == 1 or (attempt == 2 and reason == HOST_DIED):
        return reason
    return None


def run_batch(fragments, mode=None, logdir=None, files=None):
    """Run fragments on a KVM host; returns {name: Outcome}.

    files ({name: host path} of executables, e.g. a benchmark program or a
    guest kernel) are available to the fragments as "$BENCH_FILES/name".
    Console logs of every batch are kept in logdir (default build/test-logs).
    """
    files = files or {}
    mode = mode or host_mode()
    runner = _run_direct if mode == "direct" else _run_nested
    logdir = Path(logdir or REPO / "build" / "test-logs")
    logdir.mkdir(parents=True, exist_ok=True)
    outcomes = {}
    pending = list(fragments)
    for attempt in (1, 2, 3):
        with tempfile.TemporaryDirectory(prefix="vmm-batch.") as tmp:
            log = logdir / f"{pending[0].name}.{mode}.{attempt}.log"
            results = parse_batch(runner(pending, Path(tmp), log, files))
        retry = []
        for frag in pending:
            outcome = results.get(frag.name) or Outcome(frag.name, None, "", {})
            reason = _retry_reason(frag, outcome, attempt)
            if reason:
                RETRIES.append((frag.name, reason))
                retry.append(frag)
                continue
            if attempt > 1:
                outcome.retried = "; then ".join(r for n, r in RETRIES if n == frag.name)
            outcomes[frag.name] = outcome
        pending = retry
        if not pending:
            break
    return outcomes


# ---- Helpers for tests that boot the L2 kit ----

def l2_args(command=None, *, smp=1, mem="512M", extra=(), append="", exit_port=True,
            no_reboot=True, kernel="bzImage", initrd="initrd.cpio"):
    """VMM arguments, as shell text for a fragment, that boot the L2 kit.

    command runs in the guest (kit.cmd); without one the guest runs a shell.
    kernel is the kit's bzImage or its vmlinux (PVH entry); initrd is its
    initrd.cpio or initrd-fio.cpio (the same plus fio).
    extra holds further VMM arguments as shell words, inserted as they are
    (quote them yourself; "$WORK/disk.raw" expands on the host).
    With exit_port the command's status also reaches the VMM's exit status
    through isa-debug-exit at port 0xf4: (status << 1) | 1.
    """
    args = ["-accel", "kvm", "-m", mem, "-smp", str(smp), "-nographic"]
    if no_reboot:
        args.append("-no-reboot")
    params = ["console=ttyS0", "quiet", *append.split()]
    if exit_port:
        args += ["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]
        params.append("kit.exitport=0xf4")
    append_word = shlex.quote(" ".join(params))
    if command is not None:
        # One shell word: the quoted parameters, then kit.cmd computed in L1.
        append_word += f'" $(kit_cmd {shlex.quote(command)})"'
    return (" ".join([*(shlex.quote(a) for a in args), *extra])
            + f' -kernel "$KIT/{kernel}" -initrd "$KIT/{initrd}" -append ' + append_word)


def expect_guest(outcome, guest_name, *, exit_status=None, vmm_status=None, contains=()):
    """Assert that a guest booted the kit, ran its command and ended as expected.

    The failure message carries the guest's whole console log.
    """
    guest = outcome.guest(guest_name)
    problems = []
    if guest.killed:
        problems.append("was killed at its time limit")
    if guest.panicked():
        problems.append("kernel panicked")
    if "KIT-READY" not in guest.log:
        problems.append("never printed the KIT-READY marker")
    if exit_status is not None and guest.kit_exit() != exit_status:
        problems.append(f"command status {guest.kit_exit()}, expected {exit_status}")
    if vmm_status is not None and guest.rc != vmm_status:
        problems.append(f"VMM exit status {guest.rc}, expected {vmm_status}")
    for text in contains:
        if not re.search(text, guest.log, re.M):
            problems.append(f"console lacks {text!r}")
    if problems:
        raise AssertionError(f"test {outcome.name}, guest {guest_name}: "
                             + "; ".join(problems)
                             + f"\n--- console of {guest_name} ---\n{guest.log}"
                             + (f"\n(retried: {outcome.retried})" if outcome.retried else ""))
    return guest
