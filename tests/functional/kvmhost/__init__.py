"""Run functional tests "on a KVM host".

A test is a shell fragment (see hostlib.sh for what it can call) that boots
guests with the VMM under test and runs host-side tools beside them. Where
the local /dev/kvm is hardware-backed (kvm_intel or kvm_amd loaded) the
fragments run here, each batch inside a network namespace of its own; where
it is not (kvm_pvm cannot boot Linux), they run inside the nested bench host
L1 (scripts/run-in-l1.sh). VMM_TEST_HOST=direct|nested forces either way.

Fragments are batched: one L1 boot runs a list of them, and a batch is
shared out among one single-vCPU L1 per host core (l1.py boots and watches
them). The batch's output is parsed back into one Outcome per fragment,
with each guest's console log (stream.py), so that the Python tests decide
pass or fail.

Retry policy (the nested bench can still fail on its own: an L2 that resets
in early boot, an L1 lost; docs/testing.md): a fragment whose result never
came back (L1 hung or died),
one whose guest was killed at its time limit without a kernel panic, or one
whose guest ended before its system was up (Fragment.up_marker) without a
panic, is run once more in a second batch. If its host died again, it gets
a third batch; otherwise the second result is final. Every retry is
recorded (Outcome.retried, RETRIES) and printed at the end of the test
session, so CI never turns green or red by luck without saying so. A guest
that ends wrongly (panic, wrong output, wrong status) is never retried.
"""

import dataclasses
import functools
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from . import l1
from .stream import Guest, Outcome, parse_batch  # noqa: F401  (part of the API)

REPO = Path(__file__).resolve().parents[3]
HOSTLIB = Path(__file__).with_name("hostlib.sh")
SCRIPTS = REPO / "scripts"

# Every retry made in this process, as (fragment name, reason).
RETRIES = []
# Every L1 that did not finish its batch, as (log name, why, its console's end).
L1_LOSSES = []
# Every group of fragments run, as (log name, wall seconds, {fragment: its
# seconds on the host, or None}): where the suite's time goes.
GROUP_TIMES = []


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


def local_kvm():
    """True when this host has a /dev/kvm that opens, whatever backs it
    (kvm_pvm too). A host that is itself a PVM guest has none."""
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
    except OSError:
        return False
    return True


def tiny_guest_mode():
    """Where tiny guests run: on the local /dev/kvm, any kind, when there is
    one (no L1 to boot), else in L1."""
    return "direct" if local_kvm() else "nested"


@functools.cache
def kit_dir():
    """The guest kit directory, built (or found up to date) on first use;
    every later batch of the session uses it as it is."""
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


def _write_batch(fragments, directory, vmm_path_in_host):
    directory.mkdir(parents=True, exist_ok=True)
    for frag in fragments:
        (directory / f"{frag.name}.sh").write_text(frag.script + "\n")
        (directory / f"{frag.name}.env").write_text(
            f"VMM={shlex.quote(vmm_path_in_host(frag.vmm))}\nLIMIT={frag.limit}\n")


def _run_nested(fragments, workdir, log_prefix, files):
    names = {vmm: f"vmm{i}" for i, vmm in enumerate(sorted({f.vmm for f in fragments}))}
    batch = workdir / "batch"
    _write_batch(fragments, batch, lambda vmm: f"/bench/bin/{names[vmm]}")
    vmms = {name: vmm for vmm, name in names.items()}
    vmms.update(files)
    run = l1.run(batch, {f.name: f.limit for f in fragments}, log_prefix, vmms,
                 limit=120 + sum(f.limit for f in fragments), kit=kit_dir())
    if run.fate != "done":
        L1_LOSSES.append((log_prefix.name, run.fate, run.evidence))
    return run.outcomes


def _run_direct(fragments, workdir, log_prefix, files):
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
    log = Path(f"{log_prefix}.data.log")
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
    return parse_batch(log.read_text(errors="replace"))


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


def l1_parallel():
    """How many L1 hosts may run at once: one per host core (each L1 has one
    vCPU: docs/testing.md), VMM_TEST_L1_PARALLEL to choose."""
    wanted = os.environ.get("VMM_TEST_L1_PARALLEL")
    return max(1, int(wanted) if wanted else os.cpu_count() or 1)


def split_batch(fragments, count):
    """fragments in at most count groups, each keeping the batch's order:
    dealt out like cards in order of their time limits, longest first.

    A limit is an upper bound, with each module's own slack: a network
    fragment allowed 480 s takes 50, a fio one allowed 400 takes 160.
    Fragments with the same limit are mostly of one kind, so dealing gives
    every host its share of each kind. Equalising the limits' sums instead
    would split the session's batch about 500 s apart on two hosts (with
    the fragments' times of a CI run, 2026-12-07); dealing, about 50."""
    count = max(1, min(count, len(fragments)))
    dealt = sorted(fragments, key=lambda f: -f.limit)
    order = {frag.name: i for i, frag in enumerate(fragments)}
    return [sorted(dealt[i::count], key=lambda f: order[f.name]) for i in range(count)]


def _run_group(runner, fragments, log_prefix, files):
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vmm-batch.") as tmp:
        outcomes = runner(fragments, Path(tmp), log_prefix, files)
    GROUP_TIMES.append((log_prefix.name, time.monotonic() - start,
                        {f.name: getattr(outcomes.get(f.name), "seconds", None)
                         for f in fragments}))
    return outcomes


def run_batch(fragments, mode=None, logdir=None, files=None):
    """Run fragments on a KVM host; returns {name: Outcome}.

    On the nested bench the fragments are shared out among l1_parallel() L1
    hosts running at once; directly, they run one after another.
    files ({name: host path} of programs, e.g. a benchmark program, or of
    data such as a guest kernel or a disc image) are available to the
    fragments as "$BENCH_FILES/name".
    Logs of every batch are kept in logdir (default build/test-logs): NAME.data.log
    is the framed output, and on the nested bench NAME.console.log is L1's
    kernel console.
    """
    files = files or {}
    mode = mode or host_mode()
    runner = _run_direct if mode == "direct" else _run_nested
    logdir = Path(logdir or REPO / "build" / "test-logs")
    logdir.mkdir(parents=True, exist_ok=True)
    outcomes = {}
    pending = list(fragments)
    for attempt in (1, 2, 3):
        groups = split_batch(pending, l1_parallel() if mode == "nested" else 1)
        results = {}
        # Daemon threads: at a SIGTERM Python exits at once and l1's exit
        # handler ends every L1, instead of waiting for whole batches.
        threads = [threading.Thread(target=lambda g=group: results.update(
            _run_group(runner, g, logdir / f"{g[0].name}.{mode}.{attempt}", files)),
            daemon=True) for group in groups]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
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

def guest_wait_until(condition):
    """Guest shell text, for a kit.cmd, that waits up to 10 s until the
    shell condition holds. Its counter has a name of its own: a command
    that loops on $i around it must not find its own counter reset
    (bench-soak's disk rounds once looped for ever that way)."""
    return (f"until_n=0; while ! {{ {condition}; }} && [ $until_n -lt 100 ]; "
            "do sleep 0.1; until_n=$((until_n+1)); done; ")


def wait_for_disks(*devices):
    """guest_wait_until every block device named has appeared (/dev/sda, or
    "/dev/$DEV" for a shell variable)."""
    return guest_wait_until(" && ".join(f"[ -b {dev} ]" for dev in devices))


# The quick boot: the kit's vmlinux through its PVH entry, which skips the
# bzImage's self-decompression, and pci=noearly, which skips Linux's early
# PCI scans (the GART aperture checks of an AMD family 0xf CPU, qemu64's,
# probe all 256 buses by port I/O). On the nested bench the two take about
# 5 s and 8 s of each L2 boot (docs/testing.md, "The quick boot").
QUICK_BOOT_KERNEL = "vmlinux"
QUICK_BOOT_APPEND = "pci=noearly"
# x86 Linux's COMMAND_LINE_SIZE (2048) less its terminating NUL.
MAX_CMDLINE = 2047


def l2_args(command=None, *, smp=1, mem="512M", extra=(), append="", exit_port=True,
            no_reboot=True, kernel="quick", initrd="initrd.cpio"):
    """VMM arguments, as shell text for a fragment, that boot the L2 kit.

    command runs in the guest (kit.cmd); without one the guest runs a shell.
    kernel is "quick" (the quick boot above, for tests whose point is not
    the boot itself), or the kit's "bzImage" or "vmlinux" (PVH entry)
    booted with nothing added to the command line, as a user boots it;
    initrd is the kit's initrd.cpio or initrd-fio.cpio (the same plus fio).
    The guest has no NIC unless extra gives one (-nic none comes first).
    extra holds further VMM arguments as shell words, inserted as they are
    (quote them yourself; "$WORK/disk.raw" expands on the host).
    With exit_port the command's status also reaches the VMM's exit status
    through isa-debug-exit at port 0xf4: (status << 1) | 1.
    """
    # -nic none: no default NIC (QEMU's pc gives an e1000 on user
    # networking); a test that wants a network gives its own -nic or
    # -netdev/-device in extra.
    args = ["-accel", "kvm", "-m", mem, "-smp", str(smp), "-nographic", "-nic", "none"]
    if no_reboot:
        args.append("-no-reboot")
    params = ["console=ttyS0", "quiet", *append.split()]
    if kernel == "quick":
        kernel = QUICK_BOOT_KERNEL
        params.append(QUICK_BOOT_APPEND)
    if exit_port:
        args += ["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]
        params.append("kit.exitport=0xf4")
    append_word = shlex.quote(" ".join(params))
    cmdline = len(" ".join(params))
    if command is not None:
        # One shell word: the quoted parameters, then kit.cmd computed in L1.
        append_word += f'" $(kit_cmd {shlex.quote(command)})"'
        cmdline += len(" kit.cmd=") + 4 * -(-len(command.encode()) // 3)     # base64
    if cmdline > MAX_CMDLINE:
        # Linux would cut it short and the kit's init would wait for ever
        # on a kit.cmd it cannot decode: say so before anything boots.
        raise ValueError(f"the L2 kernel command line would be {cmdline} bytes, "
                         f"over Linux's {MAX_CMDLINE}: shorten the guest command")
    return (" ".join([*(shlex.quote(a) for a in args), *extra])
            + f' -kernel "$KIT/{kernel}" -initrd "$KIT/{initrd}" -append ' + append_word)


def outcome_or_skip(runs, name):
    """runs[name], or a skip where the batch has no such fragment: the
    reference column's, when Debian's QEMU is not installed."""
    # pytest only here: scripts/boot-guest.sh, bench-soak and the regression
    # scripts import this package with a Python that may not have it.
    import pytest
    if name not in runs:
        pytest.skip("Debian's qemu-system-x86 is not installed")
    return runs[name]


def expect_guest(outcome, guest_name, *, exit_status=None, vmm_status=None, contains=(),
                 show_script=False):
    """Assert that a guest booted the kit, ran its command and ended as expected.

    The failure message carries the guest's whole console log, and with
    show_script the whole output of the fragment's L1 script too (where
    it drove the guest, over QMP say).
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
                             + (f"\n(retried: {outcome.retried})" if outcome.retried else "")
                             + (f"\n--- L1 script output ---\n{outcome.output}"
                                if show_script else ""))
    return guest
