"""QMP's block commands end to end, ours against Debian's QEMU 7.2 (the
reference column), over -qmp unix:PATH,server=on,wait=off.

- The members and types of query-block and query-blockstats (the sets
  below were read from QEMU 7.2 side by side; "parent", the protocol
  node's own stats, is QEMU's alone: this block layer has no such node).
- eject and blockdev-change-medium on a paused machine (-S: no guest
  touches the drive): answers, error classes and texts, DEVICE_TRAY_MOVED.
- A tiny guest (tests/functional/tiny, "cdrom") that locks its CD-ROM
  tray: eject is refused with QEMU's message and the guest hears an eject
  request, unlocks and opens the tray itself; blockdev-change-medium then
  closes it on a new disc, which the guest sees through UNIT ATTENTION and
  READ CAPACITY.

The reference runs with -accel kvm, or tcg where KVM refuses it. Ours
needs the QMP server (branch qmp-server): until it is merged the "ours"
cases fail at start-up; run `-k reference` to check the expectations.
"""

import os
import shutil
import subprocess
import time

import pytest

from qmp_client import QMPClient, QMPError
from vmm_process import require_local_kvm

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")

# query-block, QEMU 7.2, one drive: member -> type.
BLOCK_INFO = {"device": str, "qdev": str, "locked": bool, "removable": bool,
              "io-status": str, "type": str}
BLOCK_INFO_CD = dict(BLOCK_INFO, tray_open=bool)
INSERTED = {"file": str, "node-name": str, "ro": bool, "drv": str, "backing_file_depth": int,
            "encrypted": bool, "detect_zeroes": str, "bps": int, "bps_rd": int, "bps_wr": int,
            "iops": int, "iops_rd": int, "iops_wr": int, "write_threshold": int,
            "image": dict, "cache": dict}
IMAGE = {"virtual-size": int, "filename": str, "format": str, "actual-size": int,
         "dirty-flag": bool}
CACHE = {"writeback": bool, "direct": bool, "no-flush": bool}
# query-blockstats' "stats"; idle_time_ns only once the drive was accessed.
STATS = {f"{p}_{m}": int for p in ("rd", "wr", "unmap")
         for m in ("bytes", "operations", "merged", "total_time_ns")}
STATS.update({f"{kind}_{p}_operations": int for kind in ("failed", "invalid")
              for p in ("rd", "wr", "flush", "unmap")})
STATS.update({"flush_operations": int, "flush_total_time_ns": int, "wr_highest_offset": int,
              "account_invalid": bool, "account_failed": bool, "timed_stats": list})

LOCKED = ("Device 'ide1-cd0' is locked and force was not specified, "
          "wait for tray to open and try again")


def vmm_paths(our_vmm):
    return {"ours": our_vmm, "reference": REFERENCE}


@pytest.fixture(params=["ours", "reference"])
def kind(request):
    if request.param == "reference" and not REFERENCE:
        pytest.skip("Debian's qemu-system-x86 is not installed")
    return request.param


@pytest.fixture
def images(tmp_path):
    made = {}
    for name, size in (("disk.img", 1 << 20), ("cd1.iso", 2 << 20), ("cd2.iso", 4 << 20)):
        path = tmp_path / name
        with open(path, "wb") as f:
            f.truncate(size)
        made[name] = str(path)
    return made


class Machine:
    """A VMM with a QMP socket, its serial port in a file."""

    def __init__(self, vmm, tmp_path, args, accel="kvm"):
        self.sock = str(tmp_path / "qmp.sock")
        self.serial = tmp_path / "serial.log"
        for path in (self.sock, self.serial):
            if os.path.exists(path):
                os.unlink(path)
        cmd = [vmm, "-accel", accel, "-M", "pc", "-nodefaults", "-m", "64M",
               "-display", "none", "-serial", f"file:{self.serial}",
               "-qmp", f"unix:{self.sock},server=on,wait=off"] + args
        self.stderr = tmp_path / "stderr.log"
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.stderr, "w"))
        try:
            self.qmp = QMPClient.wait_connect(self.sock, timeout=20)
        except OSError:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"{vmm} did not open its QMP socket: "
                               f"{self.stderr.read_text()[-2000:]}")
        self.qmp.negotiate()

    def wait_serial(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.serial.exists() and text in self.serial.read_text():
                return
            assert self.proc.poll() is None, f"VMM exited: {self.stderr.read_text()[-2000:]}"
            time.sleep(0.05)
        pytest.fail(f"no {text!r} on the serial port:\n{self.serial.read_text()}")

    def close(self):
        try:
            self.qmp.execute("quit")
        except OSError:
            pass
        self.qmp.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def machine(kind, our_vmm, tiny_kernels, tmp_path):
    """machine(args, append): a started VMM with the tiny guest (ours boots
    only a -kernel; under -S it never runs); the reference falls back to
    TCG."""
    started = []

    def start(args, append="hello"):
        if kind == "ours":
            require_local_kvm()
        vmm = vmm_paths(our_vmm)[kind]
        args = args + ["-kernel", str(tiny_kernels / "tiny.elf"), "-append", append]
        try:
            m = Machine(vmm, tmp_path, args)
        except RuntimeError:
            if kind != "reference":
                raise
            m = Machine(vmm, tmp_path, args, accel="tcg")
        started.append(m)
        return m

    yield start
    for m in started:
        m.close()


def assert_members(obj, expected, where):
    assert set(obj) == set(expected), f"{where}: {sorted(set(obj) ^ set(expected))}"
    for member, typ in expected.items():
        assert isinstance(obj[member], typ), f"{where}.{member}: {obj[member]!r}"


def drives_args(images, cd="cd1.iso"):
    cd_opt = f"file={images[cd]},format=raw," if cd else ""
    return ["-drive", f"file={images['disk.img']},format=raw,if=ide",
            "-drive", f"{cd_opt}if=ide,index=2,media=cdrom"]


def entry(listing, device):
    return next(e for e in listing if e["device"] == device)


def test_query_block_and_blockstats_shapes(machine, images):
    m = machine(["-S"] + drives_args(images))
    blocks = m.qmp.cmd("query-block")
    assert [b["device"] for b in blocks] == ["ide0-hd0", "ide1-cd0"]
    disk, cd = blocks
    assert_members({k: v for k, v in disk.items() if k != "inserted"}, BLOCK_INFO, "disk")
    assert_members({k: v for k, v in cd.items() if k != "inserted"}, BLOCK_INFO_CD, "cd")
    for name, info in (("disk", disk), ("cd", cd)):
        assert_members(info["inserted"], INSERTED, f"{name}.inserted")
        assert_members(info["inserted"]["image"], IMAGE, f"{name}.image")
        assert_members(info["inserted"]["cache"], CACHE, f"{name}.cache")
        assert info["inserted"]["drv"] == "raw"
        assert info["inserted"]["image"]["format"] == "raw"
        assert info["inserted"]["node-name"].startswith("#block")
        assert info["io-status"] == "ok" and info["type"] == "unknown"
    assert (disk["removable"], cd["removable"], cd["tray_open"]) == (False, True, False)
    assert (disk["inserted"]["ro"], cd["inserted"]["ro"]) == (False, True)
    assert disk["inserted"]["image"]["virtual-size"] == 1 << 20
    assert disk["inserted"]["cache"] == {"writeback": True, "direct": False, "no-flush": False}

    stats = m.qmp.cmd("query-blockstats")
    assert [s["device"] for s in stats] == ["ide0-hd0", "ide1-cd0"]
    for s in stats:
        assert {"device", "node-name", "qdev", "stats"} <= set(s)
        assert set(s) - {"device", "node-name", "qdev", "stats"} <= {"parent"}
        st = dict(s["stats"])
        st.pop("idle_time_ns", None)
        assert_members(st, STATS, f"{s['device']}.stats")
        assert s["stats"]["timed_stats"] == []
        assert s["stats"]["account_invalid"] and s["stats"]["account_failed"]
        assert s["stats"]["wr_operations"] == 0       # paused: nothing was written


def test_write_cache_property_sets_the_guest_visible_cache(machine, images, tmp_path):
    """write-cache=on|off on ide-hd and virtio-blk-pci is the write cache
    the guest sees at power-on (query-block's cache.writeback), whatever
    the drive's cache= mode; auto follows cache= (writethrough: off)."""
    paths = []
    for name in ("a", "b", "c", "d"):
        path = tmp_path / f"{name}.raw"
        path.write_bytes(bytes(1 << 20))
        paths.append(path)
    devices = [("ide-hd", "bus=ide.0,", "writeback", "off"),
               ("virtio-blk-pci", "bus=pci.0,addr=0x5,", "writeback", "off"),
               ("ide-hd", "bus=ide.1,", "writethrough", "on"),
               ("virtio-blk-pci", "", "writethrough", "auto")]
    args = ["-S"]
    for i, (device, place, cache, write_cache) in enumerate(devices):
        args += ["-drive", f"file={paths[i]},format=raw,if=none,id=d{i},cache={cache}",
                 "-device", f"{device},{place}drive=d{i},write-cache={write_cache}"]
    m = machine(args)
    writeback = {b["device"]: b["inserted"]["cache"]["writeback"] for b in m.qmp.cmd("query-block")}
    assert writeback == {"d0": False, "d1": False, "d2": True, "d3": False}, writeback


def tray_moves(m, count):
    return [(e["data"]["device"], e["data"]["tray-open"])
            for e in (m.qmp.wait_event("DEVICE_TRAY_MOVED", timeout=10) for _ in range(count))]


def test_eject_and_change_medium_answers(machine, images):
    m = machine(["-S"] + drives_args(images))
    qdev = entry(m.qmp.cmd("query-block"), "ide1-cd0")["qdev"]

    def error(command, **args):
        with pytest.raises(QMPError) as exc:
            m.qmp.cmd(command, **args)
        return exc.value.error_class, exc.value.desc

    assert error("eject", device="ide0-hd0") == ("GenericError",
                                                  "Device 'ide0-hd0' is not removable")
    assert error("eject", device="nope") == ("DeviceNotFound", "Device 'nope' not found")
    assert error("eject", id="nope") == ("DeviceNotFound", "Device 'nope' not found")
    assert error("eject") == ("GenericError", "Need exactly one of 'device' and 'id'")
    assert error("eject", device="ide1-cd0", id=qdev) == (
        "GenericError", "Need exactly one of 'device' and 'id'")
    missing = images["cd2.iso"] + ".missing"
    assert error("blockdev-change-medium", device="ide1-cd0", filename=missing) == (
        "GenericError", f"Could not open '{missing}': No such file or directory")
    assert error("blockdev-change-medium", device="ide1-cd0", filename=images["cd2.iso"],
                 **{"read-only-mode": "bogus"}) == (
        "GenericError", "Parameter 'read-only-mode' does not accept value 'bogus'")
    assert error("blockdev-change-medium", device="ide0-hd0", filename=images["cd2.iso"],
                 format="raw") == ("GenericError", "Device 'ide0-hd0' is not removable")

    assert m.qmp.cmd("eject", device="ide1-cd0") == {}
    ev = m.qmp.wait_event("DEVICE_TRAY_MOVED", timeout=10)
    assert ev["data"] == {"device": "ide1-cd0", "tray-open": True, "id": qdev}
    cd = entry(m.qmp.cmd("query-block"), "ide1-cd0")
    assert cd["tray_open"] is True and "inserted" not in cd
    assert m.qmp.cmd("eject", device="ide1-cd0") == {}      # open and empty: fine

    assert m.qmp.cmd("blockdev-change-medium", id=qdev, filename=images["cd2.iso"],
                     format="raw") == {}
    assert tray_moves(m, 1) == [("ide1-cd0", False)]
    cd = entry(m.qmp.cmd("query-block"), "ide1-cd0")
    assert cd["tray_open"] is False
    assert cd["inserted"]["file"] == images["cd2.iso"]
    assert cd["inserted"]["image"]["virtual-size"] == 4 << 20
    assert cd["inserted"]["ro"] is True

    # A closed tray opens and closes again around the change.
    assert m.qmp.cmd("blockdev-change-medium", device="ide1-cd0", filename=images["cd1.iso"],
                     format="raw", **{"read-only-mode": "retain"}) == {}
    assert tray_moves(m, 2) == [("ide1-cd0", True), ("ide1-cd0", False)]
    assert m.qmp.cmd("eject", device="ide1-cd0", force=True) == {}
    assert tray_moves(m, 1) == [("ide1-cd0", True)]


def test_empty_cdrom_takes_a_disc(machine, images):
    m = machine(["-S"] + drives_args(images, cd=None))
    cd = entry(m.qmp.cmd("query-block"), "ide1-cd0")
    assert "inserted" not in cd and cd["tray_open"] is False
    assert m.qmp.cmd("blockdev-change-medium", device="ide1-cd0", filename=images["cd1.iso"],
                     format="raw") == {}
    assert tray_moves(m, 2) == [("ide1-cd0", True), ("ide1-cd0", False)]
    assert entry(m.qmp.cmd("query-block"), "ide1-cd0")["inserted"]["file"] == images["cd1.iso"]


def test_guest_sees_media_change(machine, images):
    m = machine(drives_args(images), append="cdrom")
    m.wait_serial("tiny: cd locked")
    assert "tiny: cd ready blocks=1024\ntiny: cd read ok" in m.serial.read_text()
    cd_stats = entry(m.qmp.cmd("query-blockstats"), "ide1-cd0")["stats"]
    assert cd_stats["rd_operations"] >= 1 and cd_stats["rd_bytes"] >= 2048
    assert "idle_time_ns" in cd_stats
    assert entry(m.qmp.cmd("query-block"), "ide1-cd0")["locked"] is True

    with pytest.raises(QMPError) as exc:
        m.qmp.cmd("eject", device="ide1-cd0")
    assert (exc.value.error_class, exc.value.desc) == ("GenericError", LOCKED)
    # The guest hears the eject request, unlocks and opens the tray.
    m.wait_serial("tiny: cd tray opened")
    assert tray_moves(m, 1) == [("ide1-cd0", True)]
    cd = entry(m.qmp.cmd("query-block"), "ide1-cd0")
    assert (cd["locked"], cd["tray_open"]) == (False, True)
    assert cd["inserted"]["file"] == images["cd1.iso"]      # the disc is still in the tray

    assert m.qmp.cmd("blockdev-change-medium", device="ide1-cd0",
                     filename=images["cd2.iso"], format="raw") == {}
    assert tray_moves(m, 1) == [("ide1-cd0", False)]
    m.wait_serial("tiny: cd ready blocks=2048")
    assert "tiny: cd new medium attention=1" in m.serial.read_text()
    after = entry(m.qmp.cmd("query-blockstats"), "ide1-cd0")["stats"]
    assert after["rd_operations"] >= cd_stats["rd_operations"]   # the drive's, across discs


def test_cdrom_without_drive_is_named_by_its_id(machine, images):
    # -device ide-cd without drive=: QEMU's anonymous drive, device "".
    m = machine(["-S", "-device", "ide-cd,id=cdx,bus=ide.1"])
    blocks = m.qmp.cmd("query-block")
    assert [(b["device"], b["qdev"], b["tray_open"], "inserted" in b) for b in blocks] == [
        ("", "cdx", False, False)]
    with pytest.raises(QMPError) as exc:
        m.qmp.cmd("eject", device="")
    assert (exc.value.error_class, exc.value.desc) == ("DeviceNotFound", "Device '' not found")
    assert m.qmp.cmd("blockdev-change-medium", id="cdx", filename=images["cd2.iso"],
                     format="raw") == {}
    moved = [m.qmp.wait_event("DEVICE_TRAY_MOVED", timeout=10)["data"] for _ in range(2)]
    assert moved == [{"device": "", "tray-open": True, "id": "cdx"},
                     {"device": "", "tray-open": False, "id": "cdx"}]
    stats = m.qmp.cmd("query-blockstats")
    assert [(s["device"], s["qdev"], s["node-name"].startswith("#block")) for s in stats] == [
        ("", "cdx", True)]
