"""werror= on an IDE disk, end to end on the local /dev/kvm: the image
lives on a small tmpfs that is full, mounted in a mount namespace of the
VMM's own (unshare -m, root), and a tiny guest (tests/functional/tiny,
disk.c) writes 8 sectors where the image has a hole. Under our VMM and
Debian's qemu-system-x86_64 (the reference column), QEMU 7.2's answers:

- the default (werror=enospc): BLOCK_IO_ERROR with action "stop" and
  nospace, STOP, query-status "io-error", query-block io-status
  "nospace", HMP's "paused (io-error)" and "I/O status"; the guest's write
  waits. The test frees space, sends cont: RESUME, the write completes
  in the guest and is in the image, io-status is "ok" again.
- werror=report: the guest's write fails, action "report", the VM runs.
- werror=ignore: the guest's write succeeds, action "ignore", the image
  keeps its hole.
- -device ide-hd,drive=d0,werror=... on a drive made with -drive
  if=none,id=d0: the device's action wins over the drive's (werror=stop
  on the device stops the VM although the drive says report, and
  werror=report on the device reports although the drive says stop).
A reset and quit while stopped on the error do not wait for the kept
write. With report or ignore no error of the drive can stop the VM, and QEMU then
has no io-status: query-block and the event's "nospace" leave it out.
"""

import os
import shutil

import pytest

from test_qmp_runstate import Machine, status

FS_KB = 256
IMAGE = "disk.raw"
WRITE_OFFSET = 1024 * 1024          # LBA 2048, as disk.c writes
WRITE_BYTES = 8 * 512

# In the VMM's mount namespace: the small tmpfs, a sparse image on it and a
# file that takes every free block; then the VMM ($2...) in its place.
NAMESPACE_SETUP = (
    'mount -t tmpfs -o size={kb}k tmpfs "$1" && truncate -s 4M "$1/{image}" && '
    '{{ dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null; true; }} && shift && exec "$@"')


@pytest.fixture
def full_disk_machine(vmm, tmp_path, tiny_kernels):
    """start(werror, device_werror): a Machine whose tiny guest writes to an
    IDE disk on a full tmpfs; werror=None leaves the default. With
    device_werror the disk is -device ide-hd,drive=d0,werror=device_werror
    on ide.0's master (the guest's disk) and the drive is if=none,id=d0."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) for a tmpfs in a mount namespace")
    mnt = tmp_path / "full"
    mnt.mkdir()
    machines = []

    def start(werror, device_werror=None):
        if device_werror:
            drive = f"file={mnt}/{IMAGE},format=raw,if=none,id=d0"
            device = ["-device", f"ide-hd,drive=d0,bus=ide.0,unit=0,werror={device_werror}"]
        else:
            drive = f"file={mnt}/{IMAGE},format=raw,if=ide,index=0"
            device = []
        if werror:
            drive += f",werror={werror}"
        prefix = ["unshare", "-m", "sh", "-c", NAMESPACE_SETUP.format(kb=FS_KB, image=IMAGE),
                  "sh", str(mnt)]
        # Paused until the monitor listens: the write fails at once.
        m = Machine(vmm, tmp_path, tiny_kernels / "tiny.elf", "diskwrite",
                    ["-S", "-drive", drive] + device, prefix=prefix)
        m.drive_id = "d0" if device_werror else "ide0-hd0"
        assert m.qmp.cmd("cont") == {}
        assert m.event("RESUME") is None
        # The VMM's view of the tmpfs (its mount namespace) from outside.
        m.fs = f"/proc/{m.proc.pid}/root{mnt}"
        machines.append(m)
        return m

    yield start
    for m in machines:
        m.close()


def image_bytes(m):
    with open(f"{m.fs}/{IMAGE}", "rb") as f:
        f.seek(WRITE_OFFSET)
        return f.read(WRITE_BYTES)


def io_error_event(m, action, nospace):
    """BLOCK_IO_ERROR of the guest's write; nospace None: QEMU leaves the
    member out (no error of the drive may stop the VM)."""
    data = m.event("BLOCK_IO_ERROR")
    assert data.pop("node-name").startswith("#block")
    expected = {"device": m.drive_id, "operation": "write", "action": action,
                "reason": "No space left on device"}
    if nospace is not None:
        expected["nospace"] = nospace
    assert data == expected


def disk_info(m):
    return next(b for b in m.qmp.cmd("query-block") if b["device"] == m.drive_id)


def hmp(m, line):
    return m.qmp.cmd("human-monitor-command", **{"command-line": line})


def test_default_stops_on_enospc_and_cont_finishes_the_write(full_disk_machine):
    m = full_disk_machine(None)
    m.wait_serial(r"tiny: disk writing\n")
    io_error_event(m, "stop", nospace=True)
    assert m.event("STOP") is None
    assert m.qmp.cmd("query-status") == status("io-error")
    assert disk_info(m)["io-status"] == "nospace"
    assert hmp(m, "info status") == "VM status: paused (io-error)\r\n"
    assert "    I/O status:       nospace\r\n" in hmp(m, "info block")
    assert "tiny: disk write" not in m.serial().replace("tiny: disk writing", "")

    os.unlink(f"{m.fs}/filler")
    assert m.qmp.cmd("cont") == {}
    assert m.event("RESUME") is None
    m.wait_serial(r"tiny: disk write ok\n")
    assert m.qmp.cmd("query-status") == status("running")
    assert disk_info(m)["io-status"] == "ok"
    assert "I/O status" not in hmp(m, "info block")
    assert image_bytes(m) == b"\xa5" * WRITE_BYTES
    assert not [e for e in m.qmp.events if e["event"] in ("BLOCK_IO_ERROR", "STOP")]


def test_report_fails_the_guests_write(full_disk_machine):
    m = full_disk_machine("report")
    m.wait_serial(r"tiny: disk write failed error=")
    io_error_event(m, "report", nospace=None)
    assert m.qmp.cmd("query-status") == status("running")
    assert "io-status" not in disk_info(m)      # no error of it may stop the VM
    assert not [e for e in m.qmp.events if e["event"] == "STOP"]


def test_ignore_tells_the_guest_it_worked(full_disk_machine):
    m = full_disk_machine("ignore")
    m.wait_serial(r"tiny: disk write ok\n")
    io_error_event(m, "ignore", nospace=None)
    assert m.qmp.cmd("query-status") == status("running")
    assert "io-status" not in disk_info(m)
    assert image_bytes(m) == bytes(WRITE_BYTES)


def test_device_werror_stop_wins_over_the_drives_report(full_disk_machine):
    """-device ide-hd,...,werror=stop on -drive if=none,...,werror=report:
    the VM stops on the error, as with the default, and cont finishes the
    write."""
    m = full_disk_machine("report", device_werror="stop")
    m.wait_serial(r"tiny: disk writing\n")
    io_error_event(m, "stop", nospace=True)
    assert m.event("STOP") is None
    assert m.qmp.cmd("query-status") == status("io-error")
    assert disk_info(m)["io-status"] == "nospace"

    os.unlink(f"{m.fs}/filler")
    assert m.qmp.cmd("cont") == {}
    assert m.event("RESUME") is None
    m.wait_serial(r"tiny: disk write ok\n")
    assert disk_info(m)["io-status"] == "ok"
    assert image_bytes(m) == b"\xa5" * WRITE_BYTES


def test_device_werror_report_wins_over_the_drives_stop(full_disk_machine):
    m = full_disk_machine("stop", device_werror="report")
    m.wait_serial(r"tiny: disk write failed error=")
    io_error_event(m, "report", nospace=None)
    assert m.qmp.cmd("query-status") == status("running")
    assert "io-status" not in disk_info(m)
    assert not [e for e in m.qmp.events if e["event"] == "STOP"]


def test_reset_and_quit_while_stopped_on_io_error(full_disk_machine):
    """The kept write does not hold up a reset (the machine waits in
    prelaunch, as after any reset of a stopped machine) or quit."""
    m = full_disk_machine(None)
    io_error_event(m, "stop", nospace=True)
    assert m.event("STOP") is None
    assert m.qmp.cmd("system_reset") == {}
    assert m.event("RESET") == {"guest": False, "reason": "host-qmp-system-reset"}
    assert m.qmp.cmd("query-status") == status("prelaunch")
    assert m.qmp.cmd("quit") == {}
    assert m.event("SHUTDOWN") == {"guest": False, "reason": "host-qmp-quit"}
    assert m.wait_exit() == 0
