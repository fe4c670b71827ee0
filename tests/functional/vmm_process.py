"""Our VMM or the reference QEMU as a local process running a tiny guest,
for the tests that manage a VMM from outside (QMP, -daemonize, -pidfile,
thread names): start it with QEMU's options, wait for the guest's console,
look at its threads, stop it.

The reference is Debian's /usr/bin/qemu-system-x86_64 with -nodefaults. It
gets -accel kvm like ours, or -accel tcg where its KVM fails here (our
/dev/kvm may be kvm_pvm), so that it still answers as the comparison column.
"""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import kvmhost

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
VMMS = ["ours", "reference"]
_reference_accel = []


def require_local_kvm():
    """Skip the calling test where this host has no /dev/kvm (a host that is
    itself a PVM guest has none): it runs a VMM process here. The Linux
    guests' tests still run, in the nested bench's L1."""
    if not kvmhost.local_kvm():
        pytest.skip("this host has no /dev/kvm: the test runs a VMM process here")


# How our VMM and Debian's QEMU say that /dev/kvm would not open.
NO_KVM_ERRORS = ("cannot open /dev/kvm", "Could not access KVM kernel module")


def skip_if_stopped_at_kvm(stderr):
    """After a VMM ran: skip if it stopped at a missing /dev/kvm, before
    reaching what the test checks."""
    if any(error in stderr for error in NO_KVM_ERRORS):
        require_local_kvm()


def vmm_path(which, our_vmm):
    if which == "ours":
        require_local_kvm()
        return our_vmm
    if not REFERENCE:
        pytest.skip("Debian's qemu-system-x86 is not installed")
    return REFERENCE


def reference_accel():
    """kvm when the reference QEMU can use the local /dev/kvm, else tcg."""
    if not _reference_accel:
        # KVM is set up before the kernel is loaded: a missing kernel is the
        # first error QEMU meets when its KVM works.
        probe = subprocess.run([REFERENCE, "-accel", "kvm", "-nodefaults", "-display", "none",
                                "-kernel", "/nonexistent/kernel"],
                               capture_output=True, text=True, timeout=60)
        kvm_works = "/nonexistent/kernel" in probe.stderr
        _reference_accel.append("kvm" if kvm_works else "tcg")
    return _reference_accel[0]


def accel_args(which):
    return ["-accel", "kvm" if which == "ours" else reference_accel()]


def guest_args(which, kernel, console, append="hello", memory="64M"):
    """A tiny guest on COM1 -> console file, no other default device."""
    return [*accel_args(which), "-m", memory, "-nodefaults", "-display", "none",
            "-serial", f"file:{console}", "-kernel", str(kernel), "-append", append]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def console_count(console, text):
    path = Path(console)
    return path.read_text(errors="replace").count(text) if path.exists() else 0


def wait_console(console, text, count=1, timeout=60, proc=None):
    """Wait until the guest printed text count times; fail at once if proc
    (the VMM, when it is our child) exits first."""
    def seen():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the VMM exited with status {proc.returncode} before "
                                 f"{count} x {text!r} reached {console}")
        return console_count(console, text) >= count
    wait_for(seen, timeout, f"{count} x {text!r} in {console}")


def process_is_gone(pid):
    """True once pid has exited (a zombie nobody reaps counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def thread_names(pid):
    """The names (comm) of pid's threads, by thread id."""
    names = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[int(task.name)] = (task / "comm").read_text().strip()
        except FileNotFoundError:
            pass    # the thread ended meanwhile
    return names


def processes_whose_cmdline_has(text):
    """Pids of live processes with text in one of their arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if any(text.encode() in arg for arg in args) and not process_is_gone(int(entry.name)):
            found.append(int(entry.name))
    return found


def terminate(proc, timeout=20):
    """Stop a VMM we started (SIGTERM, then SIGKILL); its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def kill_pid(pid, timeout=20):
    """SIGTERM a VMM that is not our child (a daemon); wait until it is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        wait_for(lambda: process_is_gone(pid), timeout, f"process {pid} to exit")
    except AssertionError:
        os.kill(pid, signal.SIGKILL)
        raise
