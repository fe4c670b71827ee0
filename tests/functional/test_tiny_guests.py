"""Tiny multiboot guests on the local /dev/kvm (works on kvm_pvm too), or
in the nested bench's L1 on a host without one.

Each runs under our VMM and, as the reference column, under Debian's
qemu-system-x86_64 (through SeaBIOS) when it is installed: the guest prints
what the VMM gave it (memory map, command line) and exits through
isa-debug-exit with a status it chose.
"""

import re
import shutil

import pytest

import kvmhost
from kvmhost import Fragment

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
EXIT = "-device isa-debug-exit,iobase=0xf4,iosize=4"


# What libvirt writes for a guest with a disk and a NIC (bus=pci.0 and
# addr= on every PCI device, bootindex=, the board's devices set through
# -global), plus multifunction=on on a function of its own.
LIBVIRT_STYLE = (
    "-global kvm-pit.lost_tick_policy=delay -global PIIX4_PM.disable_s3=1 "
    "-global PIIX4_PM.disable_s4=1 -object iothread,id=iothread1,poll-max-ns=0 "
    "-drive file={disk},format=raw,if=none,id=drive-virtio-disk0 "
    "-device virtio-blk-pci,iothread=iothread1,bus=pci.0,addr=0x4,drive=drive-virtio-disk0,"
    "id=virtio-disk0,bootindex=1,write-cache=on "
    "-netdev user,id=hostnet0 "
    "-device e1000,netdev=hostnet0,id=net0,mac=52:54:00:6b:3c:58,bus=pci.0,addr=0x3,romfile= "
    "-device pci-testdev,bus=pci.0,addr=0x5,multifunction=on")


def vmms(our_vmm):
    found = {"ours": our_vmm}
    if REFERENCE:
        found["reference"] = REFERENCE
    return found


@pytest.fixture(scope="module")
def runs(our_vmm, tiny_kernels):
    # Paths as the batch sees them, here or in L1 (kvmhost.run_batch files).
    elf, disk = "$BENCH_FILES/tiny.elf", "$BENCH_FILES/board-disk.raw"
    (tiny_kernels / "board-disk.raw").write_bytes(bytes(1 << 20))
    frags = []
    for name, vmm in vmms(our_vmm).items():
        frags += [
            Fragment(f"{name}_board", f"guest_run tiny 60 -accel kvm -m 64M -nodefaults "
                                      f"-display none -serial stdio -no-reboot {EXIT} "
                                      f"{LIBVIRT_STYLE.format(disk=disk)} "
                                      f"-kernel {elf} -append 'board exit=0'",
                     vmm, limit=90, up_marker="tiny: hello"),
            Fragment(f"{name}_basic", f"guest_run tiny 60 -accel kvm -m 64M -nographic -no-reboot "
                                      f"{EXIT} -kernel {elf} -append 'hello world exit=42'",
                     vmm, limit=90, up_marker="tiny: hello"),
            Fragment(f"{name}_smp", f"guest_run tiny 60 -accel kvm -m 64M -smp 2 -nographic "
                                    f"-no-reboot {EXIT} -kernel {elf} -append 'smp exit=3'",
                     vmm, limit=90, up_marker="tiny: hello"),
            Fragment(f"{name}_testdevs", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                         f"-no-reboot {EXIT} -device pc-testdev -device pci-testdev "
                                         f"-kernel {elf} -append 'testdevs exit=0'",
                     vmm, limit=90, up_marker="tiny: hello"),
            Fragment(f"{name}_s3", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                   f"-no-reboot {EXIT} -kernel {elf} -append 's3 exit=7'",
                     vmm, limit=90, up_marker="tiny: hello"),
            # COM1 from -serial (-nographic), COM2 from -device isa-serial,
            # COM3 from the next -device isa-serial after a -serial none.
            Fragment(f"{name}_uarts", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                      f"-no-reboot {EXIT} -serial mon:stdio -serial none "
                                      f"-device isa-serial -device isa-serial "
                                      f"-kernel {elf} -append 'uarts exit=0'",
                     vmm, limit=90, up_marker="tiny: hello"),
            # -nodefaults: QEMU then has no parallel port, whose presence
            # shows in the PM function's DEVRESA (we have none).
            Fragment(f"{name}_pmconf", f"guest_run tiny 60 -accel kvm -m 64M -nodefaults "
                                       f"-display none -serial stdio -no-reboot {EXIT} "
                                       f"-kernel {elf} -append 'pmconf exit=0'",
                     vmm, limit=90, up_marker="tiny: hello"),
            # No -no-reboot: the keyboard controller's reset boots it again.
            Fragment(f"{name}_reboot", f"guest_run tiny 60 -accel kvm -m 64M -smp 2 -nographic "
                                       f"{EXIT} -kernel {elf} -append 'smp reboot exit=5'",
                     vmm, limit=90, up_marker="tiny: hello"),
        ]
    # Ours only: pdl-testdev's doorbell (ioeventfd) and coalesced array,
    # with each vCPU's exit counts printed at exit (-d exits).
    frags.append(Fragment("ours_fastpaths", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                            f"-no-reboot {EXIT} -device pdl-testdev -d exits "
                                            f"-kernel {elf} -append 'fastpaths exit=0'",
                          our_vmm, limit=90, up_marker="tiny: hello"))
    # Ours only: QEMU pauses the guest on this error instead of exiting.
    frags.append(Fragment("ours_emulfail", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                           f"-no-reboot {EXIT} -kernel {elf} "
                                           f"-append 'emulfail exit=0'",
                          our_vmm, limit=90, up_marker="tiny: hello"))
    # Ours only: pdl-testdev is ours. Its irqfd vector, then a reset (no
    # -no-reboot) and the same again in the re-created VM.
    frags.append(Fragment("ours_irqfd", f"guest_run tiny 60 -accel kvm -m 64M -nographic "
                                        f"{EXIT} -device pdl-testdev -kernel {elf} "
                                        f"-append 'irqfd reboot exit=11'",
                          our_vmm, limit=90, up_marker="tiny: hello"))
    return kvmhost.run_batch(frags, mode=kvmhost.tiny_guest_mode(),
                             files={name: tiny_kernels / name
                                    for name in ("tiny.elf", "board-disk.raw")})


def tiny_guest(runs, vmm, kind):
    """The console of one run, or a skip where the reference is missing."""
    if f"{vmm}_{kind}" not in runs:
        pytest.skip("Debian's qemu-system-x86 is not installed")
    return runs[f"{vmm}_{kind}"].guest("tiny")


def mmap_entries(log):
    return [(int(base, 16), int(length, 16), int(kind))
            for base, length, kind in re.findall(r"^tiny: mmap (\S+) (\S+) (\d+)$", log, re.M)]


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_tiny_guest_prints_memory_map_and_cmdline(runs, vmm):
    guest = tiny_guest(runs, vmm, "basic")
    assert "tiny: hello" in guest.log, guest.log
    # Multiboot: the command line is the kernel's path, then -append's text.
    assert re.search(r"^tiny: cmdline=\S*tiny\.elf hello world exit=42$", guest.log, re.M), guest.log
    entries = mmap_entries(guest.log)
    usable = sum(length for _, length, kind in entries if kind == 1)
    # 64 MiB of RAM: all usable but the legacy holes and what firmware keeps.
    assert 60 << 20 < usable <= 64 << 20, guest.log
    assert any(base == 0x100000 and kind == 1 for base, _, kind in entries), guest.log
    assert guest.rc == (42 << 1) | 1, guest.log


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_tiny_guest_wakes_second_vcpu(runs, vmm):
    guest = tiny_guest(runs, vmm, "smp")
    assert "tiny: cpu 0 up" in guest.log and "tiny: cpu 1 up" in guest.log, guest.log
    assert guest.rc == (3 << 1) | 1, guest.log


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_tiny_guest_reset_boots_again(runs, vmm):
    guest = tiny_guest(runs, vmm, "reboot")
    assert guest.log.count("tiny: hello") == 2, guest.log
    assert "tiny: resetting" in guest.log and "tiny: second boot" in guest.log, guest.log
    # Both vCPUs come back after the reset.
    assert guest.log.count("tiny: cpu 1 up") == 2, guest.log
    assert guest.rc == (5 << 1) | 1, guest.log


def tiny_testdev_report(log):
    return re.findall(r"^tiny: testdev .*$", log, re.M)


def test_qemu_test_devices_read_as_under_qemu(runs):
    """pc-testdev and pci-testdev as a guest suite written for QEMU sees them."""
    ours = tiny_guest(runs, "ours", "testdevs")
    lines = tiny_testdev_report(ours.log)
    assert "tiny: testdev port 0xe0 0x00000000c0ffee42" in lines, ours.log
    assert "tiny: testdev port 0xe0 after byte 1 0x00000000c0ff5a42" in lines, ours.log
    assert "tiny: testdev iomem 0x0000000012345678" in lines, ours.log
    assert ("tiny: testdev pci-testdev device id via CONFIG_ADDRESS | 2 "
            "0x0000000000000005") in lines, ours.log
    # Each test gets its data (a hit), other data, and a two-byte write with
    # the data in its low byte. Under KVM the eventfd tests' hits go to
    # ioeventfds and are not counted, as under QEMU; the mmio wildcard's
    # takes writes of any width, so its two-byte write is not counted either.
    assert [re.sub(r" width=.*name=", " ", line) for line in lines if "pci test=" in line] == [
        "tiny: testdev pci test=0 mmio-no-eventfd count=2",
        "tiny: testdev pci test=1 mmio-wildcard-eventfd count=0",
        "tiny: testdev pci test=2 mmio-datamatch-eventfd count=1",
        "tiny: testdev pci test=3 portio-no-eventfd count=2",
        "tiny: testdev pci test=4 portio-wildcard-eventfd count=1",
        "tiny: testdev pci test=5 portio-datamatch-eventfd count=1",
    ], ours.log
    assert ("tiny: testdev pci test=2 width=1 offset=2050 data=250 "
            "name=mmio-datamatch-eventfd count=1") in lines, ours.log
    assert ours.rc == 1, ours.log
    reference = tiny_guest(runs, "reference", "testdevs")
    assert lines == tiny_testdev_report(reference.log), (ours.log, reference.log)


def skip_missing_fast_path(log, what):
    """A skip naming the KVM capability this host lacks, if the guest said so."""
    m = re.search(rf"^tiny: pdl skip {what}: no (\S+)$", log, re.M)
    if m:
        pytest.skip(f"this /dev/kvm lacks {m.group(1)}")


def test_doorbell_rings_stay_in_kvm(runs):
    """2000 doorbell writes, through BAR0 and BAR1: the device counts every
    ring as it consumes its ioeventfd, and the vCPU made no exit to user
    space for any of them."""
    guest = tiny_guest(runs, "ours", "fastpaths")
    skip_missing_fast_path(guest.log, "doorbell")
    assert "tiny: pdl doorbell rings=2000 counted=2000 exits=0" in guest.log, guest.log
    assert guest.rc == 1, guest.log


@pytest.mark.parametrize("kind", ["mmio", "pio"])
def test_coalesced_writes_applied_in_order(runs, kind):
    """A burst of 500 writes to the coalesced array (about three times KVM's
    ring) is applied once each, in order (the device's digest of the
    sequence matches the guest's), with an exit only when the ring is full;
    a clear of the log between two bursts, not coalesced, lands after the
    first burst and before the second."""
    guest = tiny_guest(runs, "ours", "fastpaths")
    skip_missing_fast_path(guest.log, f"coalesced {kind}")
    # -d exits: the counts at exit, for the whole run, on stderr; like the
    # emulation failure's report below, it can land inside the guest's
    # last line.
    exits = re.search(r"vCPU 0 exits to user space: io=\d+ mmio=\d+ other=\d+\n", guest.log)
    assert exits, guest.log
    console = guest.log.replace(exits.group(0), "", 1)
    m = re.search(rf"^tiny: pdl coalesced {kind} writes=500 applied=(\d+) in-order=(\w+) "
                  rf"readback=(\w+) exits=(\d+)$", console, re.M)
    assert m, guest.log
    assert m.group(1, 2, 3) == ("500", "yes", "ok"), guest.log
    assert int(m.group(4)) <= 500 // 100, guest.log
    assert f"tiny: pdl coalesced {kind} after-clear applied=100 in-order=yes" in console, \
        guest.log


def test_device_isa_serial_takes_the_next_free_com_port(runs):
    """-device isa-serial after -serial: the free COM ports in order, as QEMU
    gives them (COM2 was left empty by -serial none)."""
    ours = tiny_guest(runs, "ours", "uarts")
    lines = re.findall(r"^tiny: uart .*$", ours.log, re.M)
    assert lines == ["tiny: uart 0x00000000000003f8 present",
                     "tiny: uart 0x00000000000002f8 present",
                     "tiny: uart 0x00000000000003e8 present",
                     "tiny: uart 0x00000000000002e8 absent"], ours.log
    assert ours.rc == 1, ours.log
    reference = tiny_guest(runs, "reference", "uarts")
    assert lines == re.findall(r"^tiny: uart .*$", reference.log, re.M), reference.log


def test_s3_resume_enters_with_data_segments_zero(runs):
    """Woken from S3, the guest's real-mode resume code finds low memory
    through DS as under QEMU, where SeaBIOS jumps to the waking vector with
    DS = ES = 0."""
    ours = tiny_guest(runs, "ours", "s3")
    assert "tiny: suspending to S3" in ours.log, ours.log
    assert "tiny: s3 resumed flag=Y" in ours.log, ours.log
    assert ours.rc == 1, ours.log
    reference = tiny_guest(runs, "reference", "s3")
    assert "tiny: s3 resumed flag=Y" in reference.log, reference.log


def board_report(log):
    return re.findall(r"^tiny: board .*$", log, re.M)


def test_libvirt_style_command_line_as_under_qemu(runs):
    """A libvirt-style command line is accepted by both VMMs, and the guest
    finds the same: no \\_S3 or \\_S4 in the DSDT (PIIX4_PM.disable_s3/s4),
    each device in the slot its addr= gave, and the header type's
    multi-function bit on the function with multifunction=on."""
    ours = tiny_guest(runs, "ours", "board")
    lines = board_report(ours.log)
    assert lines[:3] == ["tiny: board sleep-state S3 no", "tiny: board sleep-state S4 no",
                         "tiny: board sleep-state S5 yes"], ours.log
    assert "tiny: board pci 3 0x00000000100e8086 header 0x0000000000000000" in lines, ours.log
    assert "tiny: board pci 4 0x0000000010011af4 header 0x0000000000000000" in lines, ours.log
    assert "tiny: board pci 5 0x0000000000051b36 header 0x0000000000000080" in lines, ours.log
    assert ours.rc == 1, ours.log
    reference = tiny_guest(runs, "reference", "board")
    assert lines == board_report(reference.log), (ours.log, reference.log)


def pmconf_report(log):
    return re.findall(r"^tiny: pmconf .*$", log, re.M)


def test_piix4_pm_function_reads_and_moves_as_under_qemu(runs):
    """The PIIX4 PM function 00:01.3 as the guest finds it: all 64 config
    dwords, which device-specific bits take a write, and its PM I/O space
    moved by PMBA, switched off and on by PMREGMISC and put back, the same
    line for line as under QEMU after SeaBIOS."""
    ours = tiny_guest(runs, "ours", "pmconf")
    lines = pmconf_report(ours.log)
    assert len(lines) == 64 + 48 + 12, ours.log
    assert "tiny: pmconf config 0x0000000000000040 0x0000000000000601" in lines, ours.log
    assert "tiny: pmconf moved timer 0x000000000000b008 runs" in lines, ours.log
    assert "tiny: pmconf disabled timer 0x000000000000b008 reads 0x00000000ffffffff" in lines
    assert "tiny: pmconf restored timer 0x0000000000000608 runs" in lines, ours.log
    assert ours.rc == 1, ours.log
    reference = tiny_guest(runs, "reference", "pmconf")
    assert lines == pmconf_report(reference.log), (ours.log, reference.log)


def test_kvm_internal_error_is_reported_and_ends_the_vmm(runs):
    guest = tiny_guest(runs, "ours", "emulfail")
    error = "qemu-system-x86_64: KVM internal error on vCPU 0, suberror 1 (emulation failure)\n"
    assert error in guest.log and re.search(r"vCPU 0: RIP=[0-9a-f]{16} ", guest.log), guest.log
    # The vCPU reports on stderr at once, while the main loop may still
    # hold the end of the guest's last line for stdout (seen in L1): the
    # report can land inside that line (so can -d exits' counts, above).
    console = guest.log.replace(error, "", 1)
    assert "tiny: loading an x87 operand from MMIO" in console, guest.log
    assert "tiny: the load was emulated" not in console, guest.log
    assert guest.rc == 1, guest.log


IRQFD_ROUNDS = [
    # round, what the guest must see: the kernel delivers while unmasked;
    # masked, the signal sets the PBA bit and no interrupt comes, and the
    # unmask delivers it (the entry's mask bit, then the function mask).
    "unmasked signalled=1 delivered=1 pending=0 in-kernel=1",
    "masked signalled=1 delivered=0 pending=1 in-kernel=0",
    "unmask delivered=1 pending=0 in-kernel=1",
    "function-masked signalled=1 delivered=0 pending=1 in-kernel=0",
    "function-unmask delivered=1 pending=0 in-kernel=1",
    "unmasked-again signalled=1 delivered=1 pending=0 in-kernel=1",
    # a new message while unmasked: the MSI route follows it
    "retargeted signalled=1 delivered=0 pending=0 in-kernel=1",
    "retargeted-vector delivered=1",
    "strays=0",
]


def test_msix_vector_on_irqfd_masks_pends_and_survives_reset(runs):
    """pdl-testdev's MSI-X vector raised by the main loop through its irqfd
    reaches the guest's IDT handler with no vCPU on the path; masking holds
    it in the PBA; and all of it works again in the VM re-created by a
    reset (the MSI route is committed into the new VM)."""
    guest = tiny_guest(runs, "ours", "irqfd")
    boots = guest.log.split("tiny: resetting")
    assert len(boots) == 2 and "tiny: second boot" in boots[1], guest.log
    if "tiny: irqfd unmasked signalled=1 delivered=1 pending=0 in-kernel=0" in guest.log:
        pytest.skip("this KVM lacks KVM_CAP_IRQFD: the vector was delivered from user space")
    for boot in boots:
        lines = re.findall(r"^tiny: irqfd (.*)$", boot, re.M)
        assert lines == IRQFD_ROUNDS, guest.log
    assert guest.rc == (11 << 1) | 1, guest.log
