"""The test bench, proven with Debian's qemu-system-x86_64 as the VMM under test.

These stay as the reference column once our VMM runs the same tests: every
fragment here boots the L2 kit on a KVM host (hardware KVM here, or the nested
L1 host) in one batch, and the tests below check what came back.
"""

import shutil

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.net import iperf_guest_command, iperf_rates, nic_args, tap_netdev, tap_script
from vmm_process import require_local_kvm

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
pytestmark = pytest.mark.skipif(
    REFERENCE is None, reason="Debian's qemu-system-x86 is not installed (apt-get install qemu-system-x86)")

BOOT_CHECK = 'echo cpus=$(nproc); echo hello-from-l2; exit 7'

FIO_GUEST = (
    kvmhost.wait_for_disks("/dev/sda") +
    "fio --name=verify --filename=/dev/sda --rw=randwrite --bs=4k --size=2M "
    "--ioengine=psync --direct=1 --verify=crc32c --do_verify=1")


def fragments():
    qemu = REFERENCE
    net = nic_args("virtio-net-pci", tap_netdev())
    return [
        Fragment("boot_smp1", f"guest_run boot 120 {l2_args(BOOT_CHECK, smp=1)}", qemu),
        Fragment("boot_smp2", f"guest_run boot 120 {l2_args(BOOT_CHECK, smp=2)}", qemu),
        Fragment("iperf_virtio", tap_script("net", 150, l2_args(
            iperf_guest_command(), extra=net, append="kit.ip=10.0.2.15/24")), qemu, limit=200),
        Fragment("fio_ide", f"""
truncate -s 64M "$WORK/disk.raw"
guest_run disk 200 {l2_args(FIO_GUEST, initrd="initrd-fio.cpio", extra=["-drive", '"file=$WORK/disk.raw,format=raw,if=ide"'])}
echo "host-sees-data=$(tr -d '\\000' < "$WORK/disk.raw" | head -c 1 | wc -c)"
""", qemu, limit=240),
        # A guest that panics must fail its test with the console shown...
        Fragment("panic", f"guest_run boot 120 {l2_args('echo c > /proc/sysrq-trigger', append='panic=1')}",
                 qemu),
        # ... and one that never finishes must be killed at its limit.
        Fragment("hang", f"guest_run boot 40 {l2_args('sleep 1000')}", qemu,
                 retry_on_timeout=False),
    ]


def bench_batch(session):
    if REFERENCE is None:       # the module is skipped: nothing to boot
        return [], {}
    return fragments(), {}


@pytest.mark.parametrize("smp", [1, 2])
def test_boot_runs_command_and_returns_status(runs, smp):
    outcome = runs[f"boot_smp{smp}"]
    # isa-debug-exit turns the command's status 7 into the VMM's (7 << 1) | 1.
    expect_guest(outcome, "boot", exit_status=7, vmm_status=15,
                 contains=[f"^cpus={smp}$", "^hello-from-l2$"])


def test_iperf_virtio_net_has_throughput(runs):
    guest = expect_guest(runs["iperf_virtio"], "net", exit_status=0)
    rates = iperf_rates(guest.log)
    # Two runs, guest->host then host->guest (-R); both must move data.
    assert len(rates) == 2 and all(r > 0 for r in rates), guest.log
    print(f"iperf3 virtio-net Mbit/s guest->host {rates[0]}, host->guest {rates[1]}")


def test_fio_verify_on_ide_disk(runs):
    outcome = runs["fio_ide"]
    guest = expect_guest(outcome, "disk", exit_status=0, contains=[r"err= 0", r"^\s+READ:"])
    assert "verify: bad" not in guest.log
    assert "host-sees-data=1" in outcome.output, outcome.output


def test_panicking_guest_fails_with_console(runs):
    with pytest.raises(AssertionError, match=r"(?s)kernel panicked.*--- console of boot ---.*Kernel panic"):
        expect_guest(runs["panic"], "boot", exit_status=0)
    assert not runs["panic"].guest("boot").killed   # panic=1 + -no-reboot ended it


def test_hanging_guest_is_killed_and_fails(runs):
    outcome = runs["hang"]
    assert outcome.rc is not None, "the batch itself hung"
    with pytest.raises(AssertionError, match="killed at its time limit"):
        expect_guest(outcome, "boot", exit_status=0)


def test_tiny_guest_runs_directly_on_local_kvm(tiny_kernels):
    """The same harness, forced to run here, on any /dev/kvm (kvm_pvm too)."""
    require_local_kvm()
    frag = Fragment("tiny_direct", f"guest_run tiny 60 -accel kvm -nographic -no-reboot "
                                   f"-device isa-debug-exit,iobase=0xf4,iosize=4 "
                                   f"-kernel {tiny_kernels}/hello.elf",
                    REFERENCE, limit=90, up_marker="tiny-hello")
    outcome = kvmhost.run_batch([frag], mode="direct")["tiny_direct"]
    guest = outcome.guest("tiny")
    assert "tiny-hello" in guest.log and guest.rc == 11, guest.log
