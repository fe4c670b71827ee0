"""IDE disks and the ATAPI CD-ROM under our VMM, driven by Linux's own
drivers (ata_piix, sd, sr) on the bench, all fragments in one batch.

The L2 guests with disk load have one vCPU: 2-vCPU L2 guests doing disk
I/O can hang the nested bench's L1 (docs/testing.md, "Still open"), which
is the bench's fault, not the device's. Every aio= engine and cache= mode
is used at least once, and both lock modes carry disk load.
"""

import functools
import hashlib
import os
import re

import pytest

import full_disk
import iso_image
import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.output import line_value

DISK_MB = 64
WAIT_SDA = kvmhost.wait_for_disks("/dev/$DEV")

# A pseudo-random pattern through the page cache and back, after dropping it.
PATTERN = (
    "DEV=sda; " + WAIT_SDA +
    "echo size=$(cat /sys/block/sda/size); lspci -n | grep 8086:7010; "
    "dd if=/dev/urandom of=/tmp/p bs=1M count=8 2>/dev/null; "
    "dd if=/tmp/p of=/dev/sda bs=1M seek=1 conv=fsync 2>/dev/null && sync; "
    "echo 3 > /proc/sys/vm/drop_caches; "
    "echo written=$(md5sum < /tmp/p | cut -c1-32); "
    "echo readback=$(dd if=/dev/sda bs=1M skip=1 count=8 2>/dev/null | md5sum | cut -c1-32)")

MKFS = (
    "DEV=sda; " + WAIT_SDA +
    "mkfs.ext4 -q -F /dev/sda && mount -t ext4 /dev/sda /mnt && "
    "dd if=/dev/urandom of=/mnt/blob bs=64k count=32 2>/dev/null && "
    "mkdir /mnt/dir && echo hello-from-ide > /mnt/dir/hello.txt && "
    "echo blob=$(md5sum < /mnt/blob | cut -c1-32) && umount /mnt && echo umounted")

FIO = (
    "DEV=sda; " + WAIT_SDA + "echo cpus=$(nproc); "
    "fio --ioengine=psync --direct=1 --verify=crc32c --do_verify=1 --filename=/dev/sda "
    "--name=seqwrite --rw=write --bs=64k --size=16M --offset=0 "
    "--name=randwrite --rw=randwrite --bs=4k --size=2M --offset=32M "
    "--name=seqread --rw=read --bs=128k --size=16M --offset=0 --verify=0 "
    "--name=randread --rw=randread --bs=4k --size=2M --offset=32M --verify=0 "
    "&& echo fio-ok")

CDROM = (
    "DEV=sr0; " + WAIT_SDA +
    "echo cd-size=$(cat /sys/block/sr0/size); mount -t iso9660 -o ro /dev/sr0 /mnt && "
    "echo data=$(md5sum < /mnt/data.bin | cut -c1-32); "
    "if echo x > /mnt/new 2>/dev/null; then echo fs-write-ok; else echo fs-write-failed; fi; "
    "umount /mnt; "
    "if dd if=/dev/zero of=/dev/sr0 bs=2048 count=1 conv=fsync 2>/dev/null; "
    "then echo dev-write-ok; else echo dev-write-failed; fi")

# The guest syncs a pattern and says so; the host kills the VMM at once.
SYNC_THEN_KILLED = (
    "DEV=sda; " + WAIT_SDA +
    "dd if=/dev/urandom of=/tmp/p bs=1M count=4 2>/dev/null; "
    "dd if=/tmp/p of=/dev/sda bs=1M conv=fsync 2>/dev/null; sync; "
    "echo synced=$(md5sum < /tmp/p | cut -c1-32); echo SYNCED-MARKER; sleep 600")


def drive(cache, aio):
    return ["-drive", f'"file=$DISK,format=raw,if=ide,cache={cache},aio={aio}"']


# The image: a file in L1's tmpfs, or (for O_DIRECT, which tmpfs lacks
# before Linux 6.6) a RAM disk (hostlib.sh's ram_disk, DISK_MB large). Each
# fragment here has its own RAM disk.
IMAGE_FILE = f'DISK="$WORK/disk.raw"; truncate -s {DISK_MB}M "$DISK"\n'


def ram_disk(n):
    return f'ram_disk {n} || exit 1\nDISK=/dev/ram{n}\n'


def guest(name, vmm, command, *, lock, drives, initrd="initrd.cpio", limit=240,
          image=IMAGE_FILE, after="", smp=1):
    args = l2_args(command, smp=smp, initrd=initrd,
                   extra=[f"-machine pc,device-lock={lock},lock-stats=on", *drives])
    script = f"{image}guest_run {name} {limit} {args}\n{after}"
    return Fragment(name, script, vmm, limit=limit + 60)


def lost_fragment(vmm):
    args = l2_args(SYNC_THEN_KILLED, smp=1, extra=["-machine pc,device-lock=on",
                                                     *drive("writeback", "threads")])
    script = IMAGE_FILE + f"""guest_start lost 300 {args}
if guest_wait_for lost SYNCED-MARKER 240; then
    kill -KILL "$(cat "$WORK/lost.pid")"
    echo host-killed
fi
guest_wait lost
echo host-image=$(dd if="$DISK" bs=1M count=4 2>/dev/null | md5sum | cut -c1-32)
"""
    return Fragment("lost", script, vmm, limit=360)


def second_vmm_fragment(vmm):
    args = l2_args("sleep 600", smp=1, extra=[*drive("writeback", "threads")])
    script = IMAGE_FILE + f"""guest_start first 200 {args}
guest_wait_for first KIT-READY 150
"$VMM" -accel kvm -m 64M -nographic -drive "file=$DISK,format=raw" \\
    -kernel "$KIT/bzImage" > "$WORK/second.log" 2>&1
echo second-rc=$?
sed 's/^/second: /' "$WORK/second.log"
kill -KILL "$(cat "$WORK/first.pid")"
# The first guest's status is SIGKILL's 137 by design: the fragment's own
# status must not read as the harness killing it at its time limit.
guest_wait first > /dev/null || true
"""
    return Fragment("second_vmm", script, vmm, limit=260)


@functools.cache
def data_disc(basetemp):
    """The data CD and its file's md5, made once for the session's batch
    and the tests."""
    data = os.urandom(3 * 1024 * 1024 + 123)
    return (iso_image.make(basetemp / "storage-disc", "data", {"data.bin": data}),
            hashlib.md5(data).hexdigest())


@pytest.fixture(scope="module")
def iso(tmp_path_factory):
    return data_disc(tmp_path_factory.getbasetemp())


def bench_batch(session):
    our_vmm = session.our_vmm
    iso = data_disc(session.tmp_path_factory.getbasetemp())
    frags = [
        guest("pattern_on", our_vmm, PATTERN, lock="on", drives=drive("unsafe", "threads"),
              after='echo host-image=$(dd if="$DISK" bs=1M skip=1 count=8 2>/dev/null | '
                    'md5sum | cut -c1-32)\n'),
        guest("mkfs_off", our_vmm, MKFS, lock="off", drives=drive("none", "native"),
              image=ram_disk(0),
              after='e2fsck -fn "$DISK" > "$WORK/fsck.log" 2>&1; echo fsck-rc=$?\n'
                    'debugfs -R "cat /dir/hello.txt" "$DISK" 2>/dev/null\n'
                    'debugfs -R "dump /blob $WORK/blob" "$DISK" 2>/dev/null\n'
                    'echo host-blob=$(md5sum < "$WORK/blob" | cut -c1-32)\n'),
        # fio's four jobs run at once, on two vCPUs: both channels' users
        # and the completions race as on an SMP host.
        guest("fio_on", our_vmm, FIO, lock="on", initrd="initrd-fio.cpio", smp=2,
              drives=drive("writethrough", "io_uring"), limit=400),
        guest("fio_off", our_vmm, FIO, lock="off", initrd="initrd-fio.cpio", smp=2,
              drives=drive("directsync", "threads"), image=ram_disk(1), limit=400),
        guest("cdrom", our_vmm, CDROM, lock="on", image="",
              drives=["-cdrom", '"$BENCH_FILES/data.iso"']),
        lost_fragment(our_vmm),
        second_vmm_fragment(our_vmm),
        guest("enospc_ide", our_vmm, full_disk.guest_command("sda"), lock="on",
              drives=["-drive", '"file=$DISK,format=raw,if=ide,cache=writeback,aio=threads,'
                      'werror=report,rerror=report"'],
              image=full_disk.SETUP, after=full_disk.CLEANUP),
    ]
    return frags, {"data.iso": str(iso[0])}


def test_disk_has_its_size_and_a_pattern_reads_back(runs):
    g = expect_guest(runs["pattern_on"], "pattern_on", exit_status=0,
                     contains=[r"^size=131072$", r"^00:01\.1 0101: 8086:7010"])
    assert line_value(g.log, "written") == line_value(g.log, "readback"), g.log


def test_host_image_holds_the_pattern_byte_for_byte(runs):
    outcome = runs["pattern_on"]
    g = expect_guest(outcome, "pattern_on", exit_status=0)
    # The image's bytes, hashed on the host after the VMM exited, against
    # the guest's hash of the pattern it wrote (not zeroes).
    assert line_value(outcome.output, "host-image") == line_value(g.log, "written"), outcome.output
    assert line_value(g.log, "written") != hashlib.md5(bytes(8 << 20)).hexdigest()


def test_ext4_written_by_the_guest_checks_clean_on_the_host(runs):
    outcome = runs["mkfs_off"]
    g = expect_guest(outcome, "mkfs_off", exit_status=0, contains=[r"^umounted$"])
    assert "fsck-rc=0" in outcome.output, outcome.output
    assert re.search(r"^hello-from-ide$", outcome.output, re.M), outcome.output
    assert line_value(outcome.output, "host-blob") == line_value(g.log, "blob"), outcome.output


@pytest.mark.parametrize("name", ["fio_on", "fio_off"])
def test_fio_verifies_crc32c_on_two_vcpus_in_both_lock_modes(runs, name):
    # fio exits non-zero on a verification failure; the kit passes its status on.
    expect_guest(runs[name], name, exit_status=0, contains=[r"^cpus=2$", r"^fio-ok$"])


def test_cdrom_mounts_read_only_and_reads_the_iso(runs, iso):
    g = expect_guest(runs["cdrom"], "cdrom", exit_status=0,
                     contains=[r"^fs-write-failed$", r"^dev-write-failed$"])
    assert line_value(g.log, "data") == iso[1], g.log
    assert int(line_value(g.log, "cd-size")) * 512 == os.path.getsize(iso[0]), g.log


def test_synced_data_survives_sigkill(runs):
    outcome = runs["lost"]
    assert "host-killed" in outcome.output, outcome.output
    g = outcome.guest("lost")
    assert line_value(outcome.output, "host-image") == line_value(g.log, "synced"), outcome.output


def test_second_vmm_on_the_same_image_is_refused(runs):
    out = runs["second_vmm"].output
    assert "second-rc=1" in out, out
    assert re.search(r'second: qemu-system-x86_64: -drive file=\S+disk.raw,format=raw: '
                     r'Failed to get "write" lock: is another process using the image', out), out


def test_host_enospc_is_an_io_error_in_the_guest(runs):
    outcome = runs["enospc_ide"]
    g = expect_guest(outcome, "enospc_ide", exit_status=0)
    full_disk.check(g.log, outcome.output, "sda")
