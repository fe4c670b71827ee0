"""A CD-ROM media change that Linux's sr driver sees, on the bench: ours and
Debian's QEMU (the reference column) in one batch.

The L2 guest mounts the first ISO and reads a file, unmounts it (sr then
unlocks the tray) and says so; the L1 script then sends
blockdev-change-medium over QMP (-qmp tcp on L1's loopback, busybox nc as
the client); the guest keeps trying to mount until the second ISO's file
is there, and prints it with the new size sr found. Ours needs the QMP
server (branch qmp-server) for its column; run `-k reference` until then.
"""

import functools
import shutil

import pytest

import iso_image
import kvmhost
from kvmhost import Fragment, expect_guest, l2_args

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
PORTS = {"ours": 4444, "reference": 4445}     # fragments may share an L1

GUEST = (
    kvmhost.wait_for_disks("/dev/sr0") +
    "mount -t iso9660 -o ro /dev/sr0 /mnt && echo first=$(cat /mnt/name.txt); umount /mnt; "
    "echo CD-ONE-DONE; "
    "i=0; while [ $i -lt 240 ]; do "
    "if mount -t iso9660 -o ro /dev/sr0 /mnt 2>/dev/null; then "
    "[ \"$(cat /mnt/name.txt)\" = two ] && break; umount /mnt; fi; sleep 0.5; i=$((i+1)); done; "
    "echo second=$(cat /mnt/name.txt); echo cd-size=$(cat /sys/block/sr0/size); umount /mnt")


def qmp_script(port):
    change = ('{"execute":"blockdev-change-medium","arguments":{"device":"ide1-cd0",'
              '"filename":"\'"$BENCH_FILES/two.iso"\'","format":"raw"}}')
    # L1's loopback may be down: QMP is the only thing on it here. sr
    # unlocks the tray on its last close, which may come after the guest
    # said so: a change refused because the tray is still locked ("wait for
    # tray to open and try again", QEMU's words) is tried again, as a
    # manager would.
    return ("ip link set lo up\n"
            "tries=0\n"
            "while [ $tries -lt 10 ]; do\n"
            f"  (printf '%s\\n' '{{\"execute\":\"qmp_capabilities\"}}' '{change}'; sleep 3) "
            f"| nc 127.0.0.1 {port} > \"$WORK/qmp.out\" 2>&1\n"
            "  echo nc-rc=$?\n"
            "  sed 's/^/qmp: /' \"$WORK/qmp.out\"\n"
            "  grep -q 'is locked' \"$WORK/qmp.out\" || break\n"
            "  echo qmp-retry; sleep 1; tries=$((tries+1))\n"
            "done\n")


@functools.cache
def discs(basetemp):
    """The two discs, made once for the session's batch and the tests."""
    return {name: iso_image.make(basetemp / "cdrom-discs", name, {
                "name.txt": f"{name}\n".encode(), "pad.bin": b"\x5a" * pad_kib * 1024})
            for name, pad_kib in (("one", 64), ("two", 1024))}


@pytest.fixture(scope="module")
def isos(tmp_path_factory):
    return discs(tmp_path_factory.getbasetemp())


def bench_batch(session):
    isos = discs(session.tmp_path_factory.getbasetemp())
    frags = []
    for kind, vmm in (("ours", session.our_vmm), ("reference", REFERENCE)):
        if not vmm:
            continue
        args = l2_args(GUEST, smp=1, extra=["-cdrom", '"$BENCH_FILES/one.iso"', "-qmp",
                                            f"tcp:127.0.0.1:{PORTS[kind]},server=on,wait=off"])
        script = (f"guest_start cd 240 {args}\n"
                  f"if guest_wait_for cd CD-ONE-DONE 180; then\n{qmp_script(PORTS[kind])}fi\n"
                  f"guest_wait cd\n")
        frags.append(Fragment(f"{kind}_change", script, vmm, limit=300))
    return frags, {"one.iso": str(isos["one"]), "two.iso": str(isos["two"])}


@pytest.mark.parametrize("kind", ["ours", "reference"])
def test_sr_sees_the_new_disc(runs, isos, kind):
    outcome = kvmhost.outcome_or_skip(runs, f"{kind}_change")
    g = expect_guest(outcome, "cd", exit_status=0,
                     contains=["^first=one$", "^second=two$"], show_script=True)
    size = int(g.log.split("cd-size=")[1].split()[0]) * 512
    assert size == isos["two"].stat().st_size, g.log
    # The last session (after any refusal of a still-locked tray): both
    # qmp_capabilities and the change answered {}, the tray opened and
    # closed.
    last = outcome.output.split("qmp-retry")[-1]
    qmp = "\n".join(line for line in last.splitlines() if line.startswith("qmp: "))
    assert qmp.count('"return": {}') == 2, outcome.output
    assert qmp.count('"DEVICE_TRAY_MOVED"') == 2, qmp       # opened, then closed
