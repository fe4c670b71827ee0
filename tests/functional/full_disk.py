"""A host write error that must reach the guest (issue 10): the disk image
is a sparse file larger than the tmpfs it lives on in L1, so the host's
writes fail with ENOSPC once the file system is full. With werror=report
the guest sees an I/O error of that request, the VMM keeps running, and
the guest can still read the disk. test_storage.py (IDE) and
test_virtio_blk.py (virtio-blk) each run it in their batch."""

import re

import kvmhost

FS_MB = 8
IMAGE_MB = 64
WRITE_MB = 32       # well past what the file system holds

# L1 side: the tiny file system and the image on it, in $DISK; unmounted
# after the guest with cleanup().
SETUP = (f'mkdir -p "$WORK/full" && mount -t tmpfs -o size={FS_MB}m tmpfs "$WORK/full"\n'
         f'DISK="$WORK/full/disk.raw"; truncate -s {IMAGE_MB}M "$DISK"\n')
CLEANUP = ('echo host-fs-used-kb=$(du -k "$DISK" | cut -f1)\n'
           'umount "$WORK/full"\n')


def guest_command(dev):
    """Write until the host fails the request (O_DIRECT: the error comes
    back to dd itself, not to a later writeback), then read."""
    return (kvmhost.wait_for_disks(f"/dev/{dev}") +
            f"dd if=/dev/zero of=/dev/{dev} bs=1M count={WRITE_MB} oflag=direct 2>/tmp/dd.err; "
            "echo write-rc=$?; sed 's/^/dd: /' /tmp/dd.err; "
            "dmesg | grep -m2 'I/O error' | sed 's/^/dmesg: /'; "
            "echo io-errors=$(dmesg | grep -c 'I/O error'); "
            f"dd if=/dev/{dev} of=/dev/null bs=1M count=4 iflag=direct 2>/dev/null; "
            "echo read-rc=$?")


def check(guest_log, l1_output, dev):
    """The failed write is an I/O error of the request in the guest; the
    file system on the host is full; reads still work."""
    assert re.search(r"^write-rc=[1-9]", guest_log, re.M), guest_log
    assert re.search(r"^dd: .*Input/output error", guest_log, re.M), guest_log
    assert re.search(rf"^dmesg: .*I/O error, dev {dev}, sector \d+ op 0x1:\(WRITE\)",
                     guest_log, re.M), guest_log
    assert re.search(r"^read-rc=0$", guest_log, re.M), guest_log
    used = re.search(r"^host-fs-used-kb=(\d+)$", l1_output, re.M)
    assert used and int(used.group(1)) >= (FS_MB - 1) * 1024, l1_output
