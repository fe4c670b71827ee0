"""Start and lifecycle as QEMU 7.2: -daemonize, the locked -pidfile, -name
(debug-threads thread names, process=, query-name), each run on our VMM and
on Debian's QEMU side by side with a tiny guest on the local /dev/kvm."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from qmp_client import QMPClient
from vmm_process import (VMMS, accel_args, guest_args, kill_pid, processes_whose_cmdline_has,
                         reference_accel, require_local_kvm, terminate, thread_names, vmm_path,
                         wait_console, wait_for)

LOCKED = "qemu-system-x86_64: cannot create PID file: Cannot lock pid file: " \
         "Resource temporarily unavailable"


@pytest.fixture(params=VMMS)
def which(request):
    return request.param


@pytest.fixture
def vmm(which, our_vmm):
    return vmm_path(which, our_vmm)


def start(vmm, args, log):
    return subprocess.Popen([vmm, *args], stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)


def error_lines(stderr):
    """stderr without the reference's warnings about CPU features the host
    lacks."""
    return [line for line in stderr.splitlines() if ": warning: " not in line]


# ---- -daemonize ----

# Under -sandbox on the daemon detaches after the filter is in: its last
# steps (cd /, stdio onto /dev/null) must be allowed.
@pytest.mark.parametrize("sandbox", [[], ["-sandbox", "on"]], ids=["plain", "sandbox"])
def test_daemonize_detaches_once_built(which, vmm, tiny_kernels, tmp_path, sandbox):
    pidfile, console = tmp_path / "vm.pid", tmp_path / "console.txt"
    started = time.monotonic()
    done = subprocess.run([vmm, *guest_args(which, tiny_kernels / "tiny.elf", console),
                           "-daemonize", "-pidfile", str(pidfile), *sandbox],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    daemons = processes_whose_cmdline_has(str(pidfile))
    try:
        assert done.returncode == 0, done.stderr
        assert error_lines(done.stderr) == [] and done.stdout == "", done
        assert elapsed < 10, f"-daemonize took {elapsed:.1f} s to return"
        # The pid file holds the daemon's pid, written after the fork.
        pid = int(pidfile.read_text())
        assert daemons == [pid], (daemons, pidfile.read_text())
        # Detached: a session of its own that it does not lead (it can
        # never get a controlling terminal), / as its directory, stdio on
        # /dev/null.
        assert os.getsid(pid) not in (os.getsid(0), pid)
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
        for fd in (0, 1, 2):
            assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
        # And the guest runs.
        wait_console(console, "tiny: hello")
    finally:
        for pid in daemons:
            kill_pid(pid)
    # SIGTERM ends it cleanly: the pid file goes with it.
    assert not pidfile.exists()


@pytest.mark.parametrize("mistake", ["missing-kernel", "bad-device"])
def test_daemonize_error_reaches_the_terminal(which, vmm, tiny_kernels, tmp_path, mistake):
    """An error found while the machine is built (after the fork and the pid
    file) is printed by the daemon on the caller's stderr, the caller exits
    1, and no daemon stays behind, nor its pid file."""
    pidfile = tmp_path / "vm.pid"
    kernel = tmp_path / "no-such-kernel" if mistake == "missing-kernel" \
        else tiny_kernels / "tiny.elf"
    args = guest_args(which, kernel, tmp_path / "console.txt")
    if mistake == "bad-device":
        args += ["-drive", f"file={tmp_path / 'no-such-disk'},format=raw,if=ide"]
    done = subprocess.run([vmm, *args, "-daemonize", "-pidfile", str(pidfile)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    leftovers = processes_whose_cmdline_has(str(pidfile))
    for pid in leftovers:
        kill_pid(pid)
    assert done.returncode == 1, done
    lines = error_lines(done.stderr)
    assert len(lines) == 1 and lines[0].startswith("qemu"), done.stderr
    assert "no-such-" in lines[0], done.stderr
    assert leftovers == []
    assert not pidfile.exists()


# What QEMU 7.2 says (checked on Debian's): stdio cannot be the daemon's.
REFUSALS = [
    (["-nographic"], "qemu-system-x86_64: -nographic cannot be used with -daemonize"),
    (["-nographic", "-serial", "null"],
     "qemu-system-x86_64: -nographic cannot be used with -daemonize"),
    (["-serial", "stdio"], "qemu-system-x86_64: -serial stdio: cannot use stdio with -daemonize"),
    (["-serial", "mon:stdio"],
     "qemu-system-x86_64: -serial mon:stdio: cannot use stdio with -daemonize"),
    (["-serial", "stdio", "-chardev", "stdio,id=con"],
     "qemu-system-x86_64: -chardev stdio,id=con: cannot use stdio with -daemonize"),
]


@pytest.mark.parametrize("args,message", REFUSALS,
                         ids=["nographic", "nographic-serial-null", "serial-stdio",
                              "serial-mon-stdio", "chardev-stdio"])
def test_daemonize_refuses_stdio(which, vmm, tmp_path, args, message):
    pidfile = tmp_path / "vm.pid"
    done = subprocess.run([vmm, *accel_args(which), "-m", "64M",
                           "-daemonize", "-pidfile", str(pidfile), "-kernel", "/dev/null",
                           *(["-display", "none"] if "-nographic" not in args else []), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    leftovers = processes_whose_cmdline_has(str(pidfile))
    for pid in leftovers:
        kill_pid(pid)
    assert done.returncode == 1 and leftovers == [], done
    # QEMU adds a second line for -serial ("could not connect serial
    # device..."); the first is the one that says why.
    assert error_lines(done.stderr)[0] == message, done.stderr


# ---- -pidfile ----

@pytest.mark.parametrize("second", VMMS)
def test_held_pidfile_refuses_a_second_instance(which, vmm, second, our_vmm, tiny_kernels,
                                                tmp_path):
    """Both VMMs lock the pid file with fcntl, so each refuses the other's
    too."""
    pidfile = tmp_path / "vm.pid"
    with open(tmp_path / "first.log", "w") as log:
        first = start(vmm, [*guest_args(which, tiny_kernels / "tiny.elf", tmp_path / "c1.txt"),
                            "-pidfile", str(pidfile)], log)
        try:
            # Up and running (QEMU handles SIGTERM only from then on).
            wait_console(tmp_path / "c1.txt", "tiny: hello", proc=first)
            assert pidfile.read_text() == f"{first.pid}\n"
            done = subprocess.run([vmm_path(second, our_vmm),
                                   *guest_args(second, tiny_kernels / "tiny.elf",
                                               tmp_path / "c2.txt"),
                                   "-pidfile", str(pidfile)],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 1, done
            assert error_lines(done.stderr) == [LOCKED], done.stderr
            assert pidfile.read_text() == f"{first.pid}\n"
            assert first.poll() is None
        finally:
            status = terminate(first)
    assert status == 0
    assert not pidfile.exists()


# ---- -name: thread names and query-name ----

def while_running(vmm, args, console, tmp_path, look):
    """look(pid) on a VMM started with args, once its guest printed on
    console (every thread has started)."""
    with open(tmp_path / "vmm.log", "w") as log:
        proc = start(vmm, args, log)
        try:
            wait_console(console, "tiny: hello", proc=proc)
            return look(proc.pid)
        finally:
            terminate(proc)


def running_thread_names(vmm, args, console, tmp_path):
    """The main thread's name and all thread names of a VMM started with
    args, once its guest runs."""
    return while_running(vmm, args, console, tmp_path, lambda pid: (
        Path(f"/proc/{pid}/comm").read_text().strip(), set(thread_names(pid).values())))


QEMU_NAMES = {"CPU 0/KVM", "CPU 1/KVM", "IO iothread1"}


def named_threads(names):
    """The names QEMU gives with debug-threads=on (vCPUs and I/O threads)."""
    return {name for name in names if name.startswith(("CPU ", "IO "))} - {"IO mon_iothread"}


@pytest.mark.parametrize("debug_threads", ["on", "off"])
def test_debug_threads_names_threads_as_qemu(which, vmm, tiny_kernels, tmp_path, debug_threads):
    console = tmp_path / "console.txt"
    args = [*guest_args(which, tiny_kernels / "tiny.elf", console),
            "-smp", "2", "-object", "iothread,id=iothread1",
            "-object", "iothread,id=a-much-too-long-id",
            "-name", f"vm,debug-threads={debug_threads}"]
    if which == "reference" and reference_accel() != "kvm":
        pytest.skip("the reference runs on TCG here: its vCPU threads are CPU n/TCG")
    main_name, names = running_thread_names(vmm, args, console, tmp_path)
    assert main_name == "qemu-system-x86"
    if debug_threads == "on":
        # Names longer than 15 characters are not given at all.
        assert named_threads(names) == QEMU_NAMES, names
    else:
        assert named_threads(names) == set(), names
        assert "qemu-system-x86" in names


def test_name_process_renames_the_main_thread(which, vmm, tiny_kernels, tmp_path):
    console = tmp_path / "console.txt"
    args = [*guest_args(which, tiny_kernels / "tiny.elf", console),
            "-smp", "2", "-name", "vm,process=vm-process-name-cut-at-15"]
    main_name, names = running_thread_names(vmm, args, console, tmp_path)
    assert main_name == "vm-process-name"
    # Threads started later inherit it (no debug-threads).
    assert names <= {"vm-process-name", "qemu-system-x86", "kvm-nx-lpage-re", "gmain"}, names


def running_thread_policies(vmm, args, console, tmp_path):
    """{thread name: scheduling policy} of a VMM started with args, once its
    guest runs."""
    return while_running(vmm, args, console, tmp_path, lambda pid: {
        name: os.sched_getscheduler(tid) for tid, name in thread_names(pid).items()})


@pytest.mark.parametrize("extra,io_policy", [
    ([], os.SCHED_BATCH),
    (["-machine", "pc,io-sched-batch=off"], os.SCHED_OTHER),
    (["-sandbox", "on,resourcecontrol=deny"], os.SCHED_BATCH),
], ids=["default", "off", "sandboxed"])
def test_io_threads_batch_vcpus_normal(our_vmm, tiny_kernels, tmp_path, extra, io_policy):
    """io-sched-batch (docs/design.md): the main loop and the I/O threads
    under SCHED_BATCH, so that their wake-ups never preempt a running vCPU;
    the vCPU threads under the normal policy, also when the sandbox denies
    scheduler calls."""
    console = tmp_path / "console.txt"
    args = [*guest_args("ours", tiny_kernels / "tiny.elf", console),
            "-smp", "2", "-object", "iothread,id=io1", "-name", "vm,debug-threads=on", *extra]
    require_local_kvm()
    policies = running_thread_policies(our_vmm, args, console, tmp_path)
    assert policies["CPU 0/KVM"] == policies["CPU 1/KVM"] == os.SCHED_OTHER, policies
    assert policies["IO io1"] == io_policy, policies
    assert policies["qemu-system-x86"] == io_policy, policies


@pytest.mark.parametrize("name_args,expected", [
    (["-name", "vm1"], {"name": "vm1"}),
    (["-name", "guest=vm,,with,,commas,debug-threads=on"], {"name": "vm,with,commas"}),
    (["-name", "guest="], {"name": ""}),
    (["-name", "process=p"], {}),
    ([], {}),
], ids=["plain", "guest-escaped", "empty", "process-only", "none"])
def test_query_name(which, vmm, tiny_kernels, tmp_path, name_args, expected):
    socket = tmp_path / "qmp.sock"
    with open(tmp_path / "vmm.log", "w") as log:
        proc = start(vmm, [*guest_args(which, tiny_kernels / "tiny.elf",
                                       tmp_path / "console.txt"),
                           *name_args, "-qmp", f"unix:{socket},server=on,wait=off"], log)
        try:
            wait_for(lambda: socket.exists() or proc.poll() is not None, 30, "the QMP socket")
            assert proc.poll() is None, (tmp_path / "vmm.log").read_text()
            with QMPClient.wait_connect(str(socket)) as qmp:
                qmp.negotiate()
                assert qmp.execute("query-name") == {"return": expected}
                assert qmp.execute("query-name", {"guest": "x"}) == {"error": {
                    "class": "GenericError", "desc": "Parameter 'guest' is unexpected"}}
        finally:
            terminate(proc)
