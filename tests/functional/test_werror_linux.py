"""A full host disk under Linux's virtio_blk with QEMU's default
werror=enospc, on the bench: ours and Debian's QEMU (the reference
column) in one batch.

The image is a 64 MiB sparse file on an 8 MiB tmpfs in L1. The L2 guest
writes 16 MiB of random data to /dev/vda with O_DIRECT; the host fails
the writes with ENOSPC and the VM stops in io-error instead of the guest
seeing an error. The L1 script holds one QMP connection (busybox nc fed
through a FIFO; the VMM starts with -S so that the monitor is connected
before the guest runs), waits for BLOCK_IO_ERROR and STOP, asks
query-status and query-block, grows the tmpfs (remount, size=128m: space
freed), and sends cont. The kept requests go to the host again: the
guest's dd finishes without an I/O error, and the image holds what the
guest wrote (md5 in the guest and on the host).
"""

import shutil

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.output import line_value, qmp_messages
from test_virtio_blk import drive

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
PORTS = {"ours": 4448, "reference": 4449}     # fragments may share an L1
WRITE_MB = 16

GUEST = (kvmhost.wait_for_disks("/dev/vda") +
         f"dd if=/dev/urandom of=/tmp/p bs=1M count={WRITE_MB} 2>/dev/null; "
         "echo pattern-md5=$(md5sum < /tmp/p | cut -d' ' -f1); "
         "dd if=/tmp/p of=/dev/vda bs=1M oflag=direct 2>/tmp/dd.err; echo write-rc=$?; "
         "sed 's/^/dd: /' /tmp/dd.err; echo io-errors=$(dmesg | grep -c 'I/O error')")


def l1_script(port, args):
    return f"""
mkdir -p "$WORK/full" && mount -t tmpfs -o size=8m tmpfs "$WORK/full"
DISK="$WORK/full/disk.raw"; truncate -s 64M "$DISK"
# L1's loopback may be down: QMP is the only thing on it here.
ip link set lo up
guest_start w 400 {args}
# qmp_wait TEXT SECONDS: until the QMP output holds TEXT.
qmp_wait() {{
    _d=$(($(uptime_s) + $2))
    until grep -qF "$1" "$WORK/qmp.out" 2>/dev/null; do
        [ "$(uptime_s)" -lt "$_d" ] || {{ echo "bench: no $1 from QMP"; return 1; }}
        sleep 0.2
    done
}}
mkfifo "$WORK/qmp.in"
exec 3<> "$WORK/qmp.in"
tries=0
while [ $tries -lt 60 ]; do
    nc 127.0.0.1 {port} < "$WORK/qmp.in" > "$WORK/qmp.out" 2>&1 &
    nc_pid=$!
    sleep 1
    grep -q '"QMP"' "$WORK/qmp.out" && break
    kill "$nc_pid" 2>/dev/null; wait "$nc_pid" 2>/dev/null
    tries=$((tries+1))
done
printf '%s\\n' '{{"execute":"qmp_capabilities","id":"c1"}}' '{{"execute":"cont","id":"c2"}}' >&3
if qmp_wait '"BLOCK_IO_ERROR"' 300 && qmp_wait '"STOP"' 30; then
    printf '%s\\n' '{{"execute":"query-status","id":"s1"}}' '{{"execute":"query-block","id":"b1"}}' >&3
    qmp_wait '"b1"' 30
    echo "host-fs-used-kb=$(du -k "$DISK" | cut -f1)"
    mount -o remount,size=128m "$WORK/full"
    printf '%s\\n' '{{"execute":"cont","id":"c3"}}' >&3
    qmp_wait '"c3"' 30
fi
guest_wait w
echo "image-md5=$(head -c {WRITE_MB * 1024 * 1024} "$DISK" | md5sum | cut -d' ' -f1)"
exec 3>&-
kill "$nc_pid" 2>/dev/null
sed 's/^/qmp: /' "$WORK/qmp.out"
umount "$WORK/full"
"""


def bench_batch(session):
    our_vmm = session.our_vmm
    frags = []
    for kind, vmm in (("ours", our_vmm), ("reference", REFERENCE)):
        if not vmm:
            continue
        args = l2_args(GUEST, smp=1, extra=[
            "-S", "-qmp", f"tcp:127.0.0.1:{PORTS[kind]},server=on,wait=off",
            *drive("$DISK", "d0")])
        frags.append(Fragment(f"{kind}_werror_linux", l1_script(PORTS[kind], args), vmm,
                              limit=460))
    return frags, {}


@pytest.mark.parametrize("kind", ["ours", "reference"])
def test_full_host_disk_stops_the_vm_until_cont(runs, kind):
    outcome = kvmhost.outcome_or_skip(runs, f"{kind}_werror_linux")
    out = outcome.output
    g = expect_guest(outcome, "w", exit_status=0, show_script=True)
    msgs = qmp_messages(out)
    answers = {m["id"]: m.get("return") for m in msgs if "id" in m}
    events = [(m["event"], m.get("data")) for m in msgs if "event" in m]
    errors = [data for name, data in events if name == "BLOCK_IO_ERROR"]
    assert errors, out
    for data in errors:             # several requests may have been in flight
        assert data.pop("node-name").startswith("#block"), data
        assert data == {"device": "d0", "operation": "write", "action": "stop",
                        "nospace": True, "reason": "No space left on device"}, out
    names = [name for name, _ in events if name != "BLOCK_IO_ERROR"]
    assert names == ["RESUME", "STOP", "RESUME"], out
    assert answers["s1"] == {"status": "io-error", "singlestep": False, "running": False}, out
    disk = next(b for b in answers["b1"] if b["device"] == "d0")
    assert disk["io-status"] == "nospace", out
    assert answers["c3"] == {}, out
    assert int(line_value(out, "host-fs-used-kb")) >= 7 * 1024, out
    # The guest never saw an error, and wrote everything.
    assert line_value(g.log, "write-rc") == "0", g.log
    assert line_value(g.log, "io-errors") == "0", g.log
    assert line_value(g.log, "pattern-md5") == line_value(out, "image-md5"), (g.log, out)
