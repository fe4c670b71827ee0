"""The binary's command line as a user meets it: informational options exit
0, every mistake exits 1 with one clear line on stderr that names the
option. No guest needed: errors are found before any vCPU runs."""

import re
import subprocess
import time
from pathlib import Path

import pytest

from vmm_process import require_local_kvm, skip_if_stopped_at_kvm

BAD = [
    (["-foo"], "-foo"),
    (["-m"], "-m"),
    (["-m", "lots"], "-m lots"),
    (["-smp", "3,sockets=2,cores=2,threads=1"], "-smp"),
    (["-machine", "pc,turbo=on"], "turbo"),
    (["-machine", "q35"], "q35"),
    (["-accel", "tcg"], "-accel tcg"),
    (["-serial", "pty"], "-serial pty"),
    (["-device", "e1000,netdev=nope"], "Property 'e1000.netdev' can't find value 'nope'"),
    (["-device", "e1000,mac=zz"], "e1000.mac"),
    (["-device", "isa-debug-exit,iosize=3"], "iosize"),
    (["-initrd", "x"], "-initrd"),
    (["-cpu", "qemu64,+nosuchfeature", "-kernel", "/dev/null"], "nosuchfeature"),
    (["-kernel", "/nonexistent/bzImage"], "/nonexistent/bzImage"),
    (["-kernel", "/etc/hostname"], "/etc/hostname"),
    # QEMU 7.2's words, which name the file rather than the option.
    (["-kernel", "/dev/null", "-m", "64M", "-pidfile", "/nonexistent/dir/pid"],
     "cannot create PID file: Could not create '/nonexistent/dir/pid'"),
    (["-fw_cfg", "opt/a"], "-fw_cfg opt/a: exactly one of string= and file="),
    (["-fw_cfg", "opt/a,string=x,file=/etc/hostname"], "exactly one of"),
    (["-fw_cfg", "string=x"], "name="),
    (["-fw_cfg", "name=opt/" + "a" * 52 + ",string=x"], "too long"),
    (["-fw_cfg", "opt/a,string=1", "-fw_cfg", "opt/a,string=2"], "'opt/a' is given twice"),
    (["-global", "foo.bar=1"], "'foo' is not a valid device model name"),
    (["-global", "isa-serial.baudbase=9600"], "Property 'isa-serial.baudbase' not found"),
    (["-global", "isa-debug-exit.iosize=lots"], "iosize"),
    (["-global", "kvm-pit.lost_tick_policy=slew"],
     "-global kvm-pit.lost_tick_policy=slew: Property 'kvm-pit.lost_tick_policy' cannot be "
     "'slew': this VMM does not implement it"),
    (["-global", "mc146818rtc.lost_tick_policy=slew"],
     "Property 'mc146818rtc.lost_tick_policy' cannot be 'slew': this VMM implements only its "
     "default (\"discard\")"),
    (["-global", "i8042.kbd-throttle=on"], "Property 'i8042.kbd-throttle' cannot be 'on'"),
    (["-device", "PIIX4_PM"], "-device PIIX4_PM: Parameter 'driver' expects a pluggable device type"),
    (["-global", "isa-serial"], "-global isa-serial"),
    (["-device", "pci-testdev,addr=20"], "addr"),
    (["-device", "pdl-testdev,addr=3.8"], "addr"),
    (["-device", "pc-testdev,addr=3"], "Property 'pc-testdev.addr' not found"),
    (["-device", "isa-debug-exit,iobase=0x1,bogus=1"], "Property 'isa-debug-exit.bogus' not found"),
    (["-device", "isa-debug-exit,iobase=port"],
     "-device isa-debug-exit,iobase=port: Property 'isa-debug-exit.iobase' expects an integer"),
    (["-device", "isa-serial,id=s", "-device", "isa-debug-exit,id=s"], "Duplicate ID 's'"),
    # Found when the registry realizes the device on the machine.
    (["-device", "isa-serial,index=4", "-kernel", "/dev/null"],
     "-device isa-serial,index=4: index=4: there are 4 ISA serial ports"),
    (["-serial", "null", "-device", "isa-serial,index=0", "-kernel", "/dev/null"],
     "-device isa-serial,index=0: I/O port 0x3f8 is already in use"),
    (["-device", "isa-serial,irq=16", "-kernel", "/dev/null"], "irq=16: ISA interrupt lines"),
    (["-serial", "null", "-serial", "null", "-serial", "null", "-serial", "null",
      "-device", "isa-serial", "-kernel", "/dev/null"], "no free COM port"),
    (["-object", "memory-backend-ram,id=m,size=1G"], "'memory-backend-ram' is not supported"),
    (["-object", "iothread"], "parameter 'id' is missing"),
    (["-object", "iothread,id=1st"], "'1st' is not a valid id"),
    (["-object", "iothread,id=io0,poll-max-ns=32768"],
     "-object iothread,id=io0,poll-max-ns=32768: polling is not implemented (I/O threads sleep "
     "until an event, as QEMU's with poll-max-ns=0); use poll-max-ns=0"),
    (["-object", "iothread,id=io0,aio-max-batch=16"],
     "-object iothread,id=io0,aio-max-batch=16: a cap on the requests submitted at once is not "
     "implemented"),
    (["-device", "pci-testdev,membar=4095", "-kernel", "/dev/null"],
     "-device pci-testdev,membar=4095: membar=4095: a BAR's size must be a power of two"),
    (["-device", "pci-testdev,membar=4G", "-kernel", "/dev/null"],
     "BAR 2 (0x100000000 bytes) does not fit in the PCI memory window"),
    (["-object", "iothread,id=io0,poll-grow=-1"], "poll-grow value must be in range [0, "
     "9223372036854775807]"),
    (["-object", "iothread,id=io0,poll-shrink=x"], "Parameter 'poll-shrink' expects an int64 value"),
    (["-object", "iothread,id=io0,thread-pool-max=4"], "Invalid parameter 'thread-pool-max'"),
    # bus=: QEMU's words for an unknown bus and one of another kind.
    (["-device", "e1000,bus=pci.9", "-kernel", "/dev/null"], "-device e1000,bus=pci.9: Bus 'pci.9' not found"),
    (["-device", "e1000,bus=isa.0", "-kernel", "/dev/null"],
     "-device e1000,bus=isa.0: Device 'e1000' can't go on ISA bus"),
    (["-device", "isa-serial,bus=pci.0", "-kernel", "/dev/null"],
     "-device isa-serial,bus=pci.0: Device 'isa-serial' can't go on PCI bus"),
    (["-device", "pci-testdev,romfile=efi-e1000.rom", "-kernel", "/dev/null"],
     "-device pci-testdev,romfile=efi-e1000.rom: romfile=efi-e1000.rom: option ROMs are not "
     "supported"),
    (["-object", "iothread,id=io0", "-object", "iothread,id=io0"], "duplicate object id 'io0'"),
    # Found when the machine is built, before the kernel is loaded.
    (["-fw_cfg", "opt/a,file=/nonexistent/blob", "-kernel", "/dev/null"],
     "-fw_cfg name=opt/a: Failed to open file “/nonexistent/blob”"),
    (["-device", "pdl-testdev,addr=1", "-kernel", "/dev/null"],
     "-device pdl-testdev,addr=1: pdl-testdev: PCI address 01.0 is already taken"),
    (["-device", "pc-testdev", "-device", "pc-testdev", "-kernel", "/dev/null"],
     "-device pc-testdev: only one pc-testdev"),
    # Disks.
    (["-drive", "file=x.img,if=scsi"], "-drive file=x.img,if=scsi: unsupported bus type 'scsi'"),
    (["-drive", "file=/nonexistent/disk.img,format=raw,if=none,id=d0", "-kernel", "/dev/null"],
     "Could not open '/nonexistent/disk.img'"),
    (["-device", "virtio-blk-pci", "-kernel", "/dev/null"],
     "-device virtio-blk-pci: drive property not set"),
    (["-device", "virtio-blk-pci,drive=nope", "-kernel", "/dev/null"],
     "Property 'virtio-blk-pci.drive' can't find value 'nope'"),
    # Character backends.
    (["-chardev", "pty,id=s0"], "'pty' is not a valid char driver name"),
    (["-chardev", "socket,id=s0,path=/tmp/s"], "-chardev socket,id=s0,path=/tmp/s: chardev: socket: "
     "client mode is not supported (use server=on,wait=off)"),
    (["-chardev", "socket,id=s0,path=/tmp/s,server=on"], "add wait=off"),
    (["-chardev", "socket,id=s0,server=on,wait=off"], "give path=PATH (unix) or"),
    (["-qmp", "unix:/tmp/s", "-kernel", "/dev/null"], "socket client mode is not supported"),
    (["-qmp", "unix:/nonexistent/dir/s,server=on,wait=off", "-kernel", "/dev/null"],
     "Failed to bind socket to /nonexistent/dir/s"),
    (["-mon", "mode=control"], "-mon mode=control: Parameter 'chardev' is missing"),
    (["-mon", "chardev=c0,mode=bogus"], "unknown monitor mode \"bogus\""),
    (["-mon", "chardev=nope,mode=control"], "-mon: chardev \"nope\" not found"),
    (["-qmp", "chardev:nope"], "-mon: chardev \"nope\" not found"),
    (["-chardev", "null"], "-chardev null: chardev: no id specified"),
    (["-chardev", "null,id=c0,path=x"], "Invalid parameter 'path' for chardev backend 'null'"),
    (["-chardev", "file,id=c0"], "no filename given"),
    (["-chardev", "null,id=c0", "-chardev", "null,id=c0"], "attempt to add duplicate chardev 'c0'"),
    (["-serial", "chardev:nope", "-kernel", "/dev/null"], "no -chardev with id 'nope'"),
    (["-device", "isa-serial,chardev=nope", "-kernel", "/dev/null"],
     "Property 'isa-serial.chardev' can't find value 'nope'"),
    (["-chardev", "null,id=c0", "-serial", "chardev:c0", "-device", "isa-serial,chardev=c0",
      "-kernel", "/dev/null"], "Device 'c0' is in use"),
]

# Options the parser accepts: the machine gets as far as loading the
# (missing) kernel, so the one error names the kernel, not the option.
ACCEPTED = [
    ["-global", "kvm-pit.lost_tick_policy=discard"],
    ["-global", "driver=kvm-pit,property=lost_tick_policy,value=delay"],
    ["-global", "isa-debug-exit.iobase=0xf4", "-device", "isa-debug-exit"],
    ["-device", "isa-serial,id=com2,index=1", "-device", "isa-serial,iobase=0x2e8,irq=5"],
    ["-device", "pdl-testdev,id=pdl0,addr=5.0", "-global", "pdl-testdev.addr=6"],
    ["-device", "e1000,id=nic0,mac=52:54:00:00:00:01,addr=5",
     "-device", "e1000-82540em,x-coalesced-mmio=off,x-tx-defer=off"],
    # QEMU's aliases, bus=, the PCI properties and bootindex= on a NIC.
    ["-netdev", "user,id=n0",
     "-device", "virtio-net,netdev=n0,bus=pci.0,addr=0x3,bootindex=2,multifunction=on,romfile="],
    ["-device", "isa-serial,bus=isa.0", "-device", "pci-testdev,bus=pci.0,addr=0x6.0x1,membar=1M"],
    ["-global", "PIIX4_PM.disable_s3=1", "-global", "PIIX4_PM.disable_s4=1",
     "-global", "mc146818rtc.lost_tick_policy=discard", "-global", "i8042.kbd-throttle=off",
     "-global", "virtio-net.mq=on"],
    ["-object", "iothread,id=io0,poll-max-ns=0,poll-grow=2,poll-shrink=4,aio-max-batch=0"],
    ["-fw_cfg", "opt/org.test/a,string=hello", "-fw_cfg", "name=opt/b,file=/etc/hostname"],
    ["-machine", "pc,acpi=off"],
    ["-no-acpi"],
    ["-object", "iothread,id=io0", "-object", "qom-type=iothread,id=io1"],
]
MISSING_KERNEL = ["-kernel", "/nonexistent/bzImage"]


def run(vmm, args):
    proc = subprocess.run([vmm, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=30)
    skip_if_stopped_at_kvm(proc.stderr)
    return proc


@pytest.mark.parametrize("args,named", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_command_line_exits_1_with_one_line(our_vmm, args, named):
    proc = run(our_vmm, args)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("qemu-system-x86_64: ") and named in lines[0], proc.stderr


@pytest.mark.parametrize("props,named", [
    ("num-queues=0", "num-queues property must be between 1 and 64"),
    ("queue-size=100", "queue-size property must be a power of two"),
    ("iothread=none", "Property 'virtio-blk-pci.iothread' can't find value 'none'"),
])
def test_bad_virtio_blk_properties(our_vmm, tmp_path, props, named):
    image = tmp_path / "disk.img"
    image.write_bytes(bytes(1 << 20))
    proc = run(our_vmm, ["-drive", f"file={image},format=raw,if=none,id=d0",
                         "-device", f"virtio-blk-pci,drive=d0,{props}", "-kernel", "/dev/null"])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr


def test_drive_with_virtio_blk_reaches_the_kernel_loader(our_vmm, tmp_path):
    image = tmp_path / "disk.img"
    image.write_bytes(bytes(1 << 20))
    proc = run(our_vmm, ["-drive", f"file={image},format=raw,if=none,id=d0",
                         "-device", "virtio-blk-pci,drive=d0,serial=s1,num-queues=2",
                         *MISSING_KERNEL])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "/nonexistent/bzImage" in lines[0], proc.stderr


@pytest.mark.parametrize("args", ACCEPTED, ids=[" ".join(a) for a in ACCEPTED])
def test_accepted_options_reach_the_machine(our_vmm, args):
    proc = run(our_vmm, [*args, *MISSING_KERNEL])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "/nonexistent/bzImage" in lines[0], proc.stderr


def test_fw_cfg_name_outside_opt_warns_and_is_accepted(our_vmm):
    proc = run(our_vmm, ["-fw_cfg", "etc/mine,string=1", *MISSING_KERNEL])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == ("qemu-system-x86_64: warning: externally provided fw_cfg item names "
                        "should be prefixed with \"opt/\""), proc.stderr
    assert len(lines) == 2 and "/nonexistent/bzImage" in lines[1], proc.stderr


@pytest.mark.parametrize("args,expect", [
    (["-version"], "QEMU emulator version"),
    (["--version"], "QEMU emulator version"),
    (["-h"], "-kernel"),
    (["-machine", "help"], "pc"),
    (["-device", "help"], "isa-debug-exit"),
    (["-device", "help"], 'name "pc-testdev", bus ISA'),
    (["-device", "help"], 'name "pci-testdev", bus PCI, desc "QEMU\'s PCI test device 1b36:0005"'),
    (["-device", "help"], 'name "pdl-testdev", bus PCI'),
    (["-device", "pdl-testdev,help"],
     "  addr=<int32>           - Slot and optional function number, example: 06.0 or 06 "
     "(default: -1)\n"),
    (["-device", "isa-debug-exit,help"], "  iosize=<uint32>        -  (default: 2)\n"),
    (["-device", "pc-testdev,help"], "There are no options for pc-testdev."),
    (["-device", "help"], 'Misc devices:\nname "isa-debug-exit", bus ISA'),
    (["-device", "help"], 'name "ide-hd", bus IDE, desc "virtual IDE disk"\nname "virtio-blk-pci", bus PCI'),
    (["-device", "virtio-blk-pci,help"], "  num-queues=<uint16>    -  (default: 65535)\n"),
    (["-device", "help"], 'name "e1000", bus PCI, alias "e1000-82540em", desc "Intel Gigabit '
     'Ethernet"\n'),
    (["-device", "virtio-blk,help"], "virtio-blk-pci options:\n"),
    (["-device", "PIIX4_PM,help"], "  disable_s3=<uint8>     -  (default: 0)\n"),
    (["-device", "pci-testdev,help"], "  membar=<size>          -  (default: 0)\n"),
    (["-object", "iothread,help"], "iothread options:\n  aio-max-batch=<int>\n"),
    (["-device", "virtio-blk-pci,help"],
     '  disable-legacy=<OnOffAuto> - on/off/auto (default: "auto")\n'
     "  disable-modern=<bool>  -  (default: false)\n"),
    (["-device", "virtio-blk-pci,help"], "  ioeventfd=<bool>       - on/off (default: true)\n"),
    (["-device", "ide-hd,help"], '  werror=<BlockdevOnError> - Error handling policy, '
     'report/ignore/enospc/stop/auto (default: "auto")\n'),
    (["-device", "virtio-blk-pci,help"], '  rerror=<BlockdevOnError> - Error handling policy, '
     'report/ignore/enospc/stop/auto (default: "auto")\n'),
    (["-cpu", "help"], "qemu64"),
    (["-object", "help"], "iothread"),
])
def test_informational_options_exit_0(our_vmm, args, expect):
    proc = run(our_vmm, args)
    assert proc.returncode == 0 and expect in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("wiring", [
    ["-serial", "chardev:con"],
    ["-serial", "none", "-device", "isa-serial,chardev=con"],
], ids=["serial-chardev", "isa-serial-chardev"])
def test_chardev_carries_the_guest_console(our_vmm, tiny_kernels, tmp_path, wiring):
    """A -chardev named by -serial chardev:ID or by isa-serial's chardev=
    gets what the guest writes to COM1."""
    out = tmp_path / "console.txt"
    proc = run(our_vmm, ["-accel", "kvm", "-m", "64M", "-display", "none",
                         "-chardev", f"file,id=con,path={out}", *wiring,
                         "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
                         "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "exit=4"])
    assert proc.returncode == 9, proc.stderr
    assert "tiny: hello" in out.read_text()


def test_object_iothread_runs_a_thread_of_its_name(our_vmm, tiny_kernels):
    """-object iothread,id=ID starts a thread "IO ID" in the VMM, as QEMU
    names its I/O threads (with -name debug-threads=on, as QEMU does), and
    it lives as long as the machine."""
    require_local_kvm()
    proc = subprocess.Popen([our_vmm, "-accel", "kvm", "-m", "64M", "-nographic",
                             "-name", "debug-threads=on",
                             "-object", "iothread,id=io0", "-object", "iothread,id=disk-io",
                             "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "hello"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert "tiny: hello" in proc.stdout.readline(), "the tiny guest did not start"
        deadline = time.monotonic() + 10
        names = set()
        while time.monotonic() < deadline and not {"IO io0", "IO disk-io"} <= names:
            names = {task.joinpath("comm").read_text().strip()
                     for task in Path(f"/proc/{proc.pid}/task").iterdir()}
            time.sleep(0.1)
        assert {"IO io0", "IO disk-io"} <= names, names
    finally:
        proc.kill()
        proc.wait()


# ---- drives: every mistake is one line naming the -drive or -device option ----

NO_KERNEL = ["-kernel", "/dev/null"]


def drive_errors(tmp):
    raw = tmp / "disk.raw"
    raw.write_bytes(bytes(1 << 20))
    raw2 = tmp / "disk2.raw"
    raw2.write_bytes(bytes(1 << 20))
    qcow2 = tmp / "disk.qcow2"
    qcow2.write_bytes(b"QFI\xfb" + bytes(1 << 16))

    def on_drive_d0(device):
        """-device device on the if=none drive d0."""
        return ["-drive", f"file={raw},format=raw,if=none,id=d0", "-device", device, *NO_KERNEL]

    return [
        (["-drive", f"file={tmp}/missing.img,format=raw", *NO_KERNEL],
         f"-drive file={tmp}/missing.img,format=raw: Could not open '{tmp}/missing.img': "
         "No such file or directory"),
        (["-drive", f"file={tmp},format=raw", *NO_KERNEL],
         f"-drive file={tmp},format=raw: Could not open '{tmp}': not a regular file or a "
         "block device"),
        (["-drive", f"file={raw},format=qcow2"], "format 'qcow2' is not supported"),
        (["-drive", f"file={qcow2}", *NO_KERNEL], "is in qcow2 format: only raw images"),
        (["-hda", str(qcow2), *NO_KERNEL], f"-hda {qcow2}: Image"),
        (["-drive", f"file={raw},format=raw,bogus=1"], "unsupported parameter 'bogus'"),
        (["-drive", f"file={raw},format=raw,if=scsi"],
         f"-drive file={raw},format=raw,if=scsi: unsupported bus type 'scsi'"),
        (["-drive", f"file={raw},format=raw,cache=fast"], "cache"),
        (["-drive", f"file={raw},format=raw,aio=native"], "aio=native was specified"),
        (["-hdc", str(raw), "-cdrom", str(raw)], "-cdrom"),
        (["-device", "ide-hd", *NO_KERNEL], "-device ide-hd: No drive specified"),
        (["-device", "ide-cd,bus=ide.2", *NO_KERNEL], "-device ide-cd,bus=ide.2: Bus 'ide.2' not found"),
        (["-device", "ide-cd,unit=2", *NO_KERNEL], "Can't create IDE unit 2, bus supports only 2 units"),
        (["-device", "ide-hd,drive=nope", *NO_KERNEL], "Property 'ide-hd.drive' can't find value 'nope'"),
        (["-drive", f"file={raw},format=raw,if=none,id=d0,readonly=on", "-device", "ide-hd,drive=d0",
          *NO_KERNEL], "-device ide-hd,drive=d0: Block node is read-only"),
        (["-drive", f"file={raw},format=raw,if=none,id=d0", "-device", "ide-hd,drive=d0",
          "-device", "ide-cd,drive=d0", *NO_KERNEL], "Drive 'd0' is already in use by another device"),
        (["-drive", f"file={raw},format=raw,id=d0", "-device", "ide-hd,drive=d0", *NO_KERNEL],
         "Drive 'd0' is already in use because it has been automatically connected"),
        (["-drive", f"file={raw},format=raw,if=none,id=d0", "-drive", f"file={raw2},format=raw",
          "-device", "ide-hd,drive=d0,bus=ide.0,unit=0", *NO_KERNEL],
         "-device ide-hd,drive=d0,bus=ide.0,unit=0: IDE unit 0 is in use"),
        (["-drive", f"file={raw},format=raw", "-drive", f"file={raw},format=raw", *NO_KERNEL],
         "Failed to get \"write\" lock"),
        (["-drive", f"file={raw},format=raw,media=cdrom,index=2", "-device", "ide-cd,bus=ide.1,unit=0",
          *NO_KERNEL],
         "-device ide-cd,bus=ide.1,unit=0: IDE unit 0 is in use"),
        (["-drive", f"file={raw},format=raw,index=1", "-device", "ide-hd,drive=ide0-hd1", *NO_KERNEL],
         "automatically connected"),
        # Without bus= an IDE device goes to ide.1, as in QEMU 7.2, and
        # nowhere else when ide.1 is full.
        (["-drive", f"file={raw},format=raw,media=cdrom,index=2", "-device", "ide-cd",
          "-device", "ide-cd", *NO_KERNEL], "-device ide-cd: IDE unit 1 is in use"),
        (on_drive_d0("virtio-blk-pci,drive=d0,disable-legacy=on,disable-modern=on"),
         "device cannot work as neither modern nor legacy mode is enabled"),
        (on_drive_d0("virtio-blk-pci,drive=d0,disable-legacy=maybe"),
         "Property 'virtio-blk-pci.disable-legacy' expects on, off or auto, not 'maybe'"),
        # The devices' werror=/rerror= (QEMU's words for a bad enum value).
        (on_drive_d0("ide-hd,drive=d0,werror=foo"),
         "-device ide-hd,drive=d0,werror=foo: Parameter 'werror' does not accept value 'foo'"),
        (on_drive_d0("ide-cd,drive=d0,rerror=STOP"),
         "-device ide-cd,drive=d0,rerror=STOP: Parameter 'rerror' does not accept value 'STOP'"),
        (on_drive_d0("virtio-blk-pci,drive=d0,werror="),
         "-device virtio-blk-pci,drive=d0,werror=: Parameter 'werror' does not accept value ''"),
    ]


def test_drive_errors_exit_1_with_one_line(our_vmm, tmp_path):
    for args, named in drive_errors(tmp_path):
        proc = run(our_vmm, args)
        assert proc.returncode == 1, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, (args, proc.stderr)
        assert lines[0].startswith("qemu-system-x86_64: ") and named in lines[0], (args, proc.stderr)


def test_drives_are_accepted(our_vmm, tmp_path):
    """-hda..-hdd, -cdrom (also empty), a bare image argument, -device ide-hd
    and ide-cd on if=none drives: the machine is built up to the kernel."""
    disks = []
    for name in ("a", "b", "c"):
        disk = tmp_path / f"{name}.raw"
        disk.write_bytes(bytes(1 << 20))
        disks.append(str(disk))
    for args in (
        ["-hda", disks[0], "-hdb", disks[1], "-cdrom", disks[2]],
        [disks[0], "-drive", "if=ide,index=3,media=cdrom"],
        ["-drive", f"file={disks[0]},format=raw,if=none,id=d0", "-device", "ide-hd,drive=d0,id=disk0",
         "-drive", f"file={disks[1]},format=raw,if=none,id=d1,readonly=on",
         "-device", "ide-cd,drive=d1,bus=ide.1,unit=1", "-device", "ide-cd,bus=ide.0"],
        # werror=/rerror= on the devices, enospc for reads too (as QEMU 7.2).
        ["-drive", f"file={disks[0]},format=raw,if=none,id=d0",
         "-device", "ide-hd,drive=d0,werror=stop,rerror=enospc",
         "-drive", f"file={disks[1]},format=raw,if=none,id=d1,readonly=on",
         "-device", "ide-cd,drive=d1,werror=report,rerror=stop",
         "-drive", f"file={disks[2]},format=raw,if=none,id=d2,werror=stop",
         "-device", "virtio-blk-pci,drive=d2,werror=ignore,rerror=auto"],
        ["-drive", f"file={disks[0]},format=raw,cache=none,aio=native",
         "-drive", f"file={disks[1]},format=raw,cache=directsync,aio=io_uring,index=1"],
    ):
        proc = run(our_vmm, [*args, *MISSING_KERNEL])
        assert proc.returncode == 1, proc.stderr
        # Probed images get QEMU's warning; the one error is the kernel's.
        errors = [line for line in proc.stderr.splitlines()
                  if line.startswith("qemu-system-x86_64:")]
        assert len(errors) == 1 and "/nonexistent/bzImage" in errors[0], (args, proc.stderr)


def test_probed_raw_image_warns_as_qemu(our_vmm, tmp_path):
    disk = tmp_path / "disk.raw"
    disk.write_bytes(bytes(1 << 20))
    proc = run(our_vmm, ["-hda", str(disk), *MISSING_KERNEL])
    assert proc.stderr.startswith(
        f"WARNING: Image format was not specified for '{disk}' and probing guessed raw."), proc.stderr


def test_virtio_drive_gets_a_virtio_blk_device(our_vmm, tiny_kernels, tmp_path):
    """-drive if=virtio creates a virtio-blk-pci device for the drive, as
    QEMU does: its lock shows in the statistics."""
    disk = tmp_path / "disk.raw"
    disk.write_bytes(bytes(1 << 20))
    proc = run(our_vmm, ["-accel", "kvm", "-m", "64M", "-display", "none",
                         "-machine", "pc,lock-stats=on",
                         "-drive", f"file={disk},format=raw,if=virtio",
                         "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
                         "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "exit=4"])
    assert proc.returncode == 9, proc.stderr
    assert re.search(r"^\s+\S+\s+virtio-blk-pci\s", proc.stderr, re.M), proc.stderr


def test_second_vmm_on_the_same_image_is_refused(our_vmm, tiny_kernels, tmp_path):
    """QEMU's image locks: a second writer gets one line naming the image;
    a read-only CD-ROM next to the writer is refused too (it cannot share
    the writer's permission)."""
    disk = tmp_path / "disk.raw"
    disk.write_bytes(bytes(1 << 20))
    require_local_kvm()
    first = subprocess.Popen([our_vmm, "-accel", "kvm", "-m", "64M", "-nographic",
                              "-drive", f"file={disk},format=raw",
                              "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "hello"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        assert "tiny: hello" in first.stdout.readline(), "the tiny guest did not start"
        for drive, lock in ((f"file={disk},format=raw", '"write"'),
                            (f"file={disk},format=raw,media=cdrom", 'shared "write"')):
            proc = run(our_vmm, ["-drive", drive, "-kernel", str(tiny_kernels / "tiny.elf")])
            assert proc.returncode == 1, proc.stderr
            assert proc.stderr.strip() == (
                f"qemu-system-x86_64: -drive {drive}: Failed to get {lock} lock: is another "
                f"process using the image [{disk}]?"), proc.stderr
    finally:
        first.kill()
        first.wait()


# ---- network: every mistake is one line naming the -netdev, -nic or -net option ----

NET_BAD = [
    (["-netdev", "foo,id=n0"], "-netdev foo,id=n0: Parameter 'type' expects a netdev backend type"),
    (["-netdev", "tap"], "-netdev tap: Parameter 'id' is missing"),
    (["-netdev", "tap,id=1st"], "'1st' is not a valid id"),
    (["-netdev", "socket,id=n0,listen=127.0.0.1:1", "-netdev", "tap,id=n0"],
     "-netdev tap,id=n0: Duplicate ID 'n0' for netdev"),
    (["-nic", "tap,mac=52:54:00:12:34"], "-nic tap,mac=52:54:00:12:34: Property 'e1000.mac' "
     "expects a MAC address"),
    (["-nic", "tap,model=rtl8139"], "Unsupported NIC model: rtl8139"),
    (["-net", "nic,model=e1000"], "-net nic,model=e1000: the legacy -net hub is not supported"),
    (["-net", "user"], "use -nic"),
    (["-netdev", "tap,id=n0,vhost=off,vhostforce=on", *NO_KERNEL],
     "-netdev tap,id=n0,vhost=off,vhostforce=on: vhostforce=on needs vhost-net, but vhost=off "
     "was given"),
    (["-netdev", "tap,id=n0,vhost=off,vhostfd=0", *NO_KERNEL],
     "vhostfd(s)= is not valid without vhost"),
    (["-netdev", "tap,id=n0,queues=0", *NO_KERNEL], "Parameter 'queues' expects a number"),
    (["-netdev", "tap,id=n0,sndbuf=1", *NO_KERNEL], "Invalid parameter 'sndbuf'"),
    (["-netdev", "socket,id=s0,udp=127.0.0.1:5000", *NO_KERNEL],
     "Parameter 'udp' is not supported"),
    (["-netdev", "socket,id=s0", *NO_KERNEL], "exactly one of listen=, connect= and fd="),
    (["-netdev", "socket,id=s0,connect=127.0.0.1:1", *NO_KERNEL],
     "-netdev socket,id=s0,connect=127.0.0.1:1: can't connect socket to 127.0.0.1:1: "
     "Connection refused"),
]


@pytest.mark.parametrize("args,named", NET_BAD, ids=[" ".join(a) for a, _ in NET_BAD])
def test_network_errors_exit_1_with_one_line(our_vmm, args, named):
    proc = run(our_vmm, args)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("qemu-system-x86_64: ") and named in lines[0], proc.stderr


@pytest.mark.skipif(Path("/dev/vhost-net").exists(),
                    reason="this host has /dev/vhost-net: vhostforce=on has nothing to refuse")
def test_vhostforce_without_vhost_net_exits_1(our_vmm):
    """As QEMU 7.2: vhostforce=on asks for vhost-net, and its absence is an
    error (vhost=on alone would warn and go on in user space)."""
    proc = run(our_vmm, ["-netdev", "tap,id=n0,vhostforce=on", *NO_KERNEL])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["qemu-system-x86_64: -netdev tap,id=n0,vhostforce=on: tap: open vhost "
                     "char device failed: No such file or directory"], proc.stderr


def root_with(*tools):
    import os
    import shutil
    return os.geteuid() == 0 and all(shutil.which(t) for t in tools)


@pytest.mark.skipif(not root_with("unshare", "mount"),
                    reason="hiding /dev/net/tun needs root and a mount namespace")
def test_missing_dev_net_tun_is_one_line(our_vmm):
    """A host without /dev/net/tun (simulated: an empty tmpfs over /dev/net
    in a mount namespace of the VMM's own)."""
    proc = subprocess.run(["unshare", "--mount", "--net", "sh", "-c",
                           'mount -t tmpfs none /dev/net && exec "$@"', "sh", our_vmm,
                           "-netdev", "tap,id=n0,script=no", *NO_KERNEL],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    skip_if_stopped_at_kvm(proc.stderr)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "qemu-system-x86_64: -netdev tap,id=n0,script=no: could not open /dev/net/tun: "
        "No such file or directory"], proc.stderr


@pytest.mark.skipif(not root_with("setpriv"), reason="running as nobody needs root and setpriv")
def test_dev_net_tun_without_permission_is_one_line(our_vmm):
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           our_vmm, "-netdev", "tap,id=n0,script=no", *NO_KERNEL],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    if "/dev/kvm" in proc.stderr:
        # KVM is opened before the netdevs are created, as in QEMU.
        pytest.skip("nobody cannot open /dev/kvm here, so never reaches /dev/net/tun")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "-netdev tap,id=n0,script=no: could not" in lines[0] and \
        "Permission denied" in lines[0], proc.stderr


@pytest.mark.skipif(not root_with("unshare"), reason="a tap in a network namespace needs root")
def test_tap_runs_its_scripts_in_a_namespace(our_vmm, tmp_path):
    """-netdev tap creates the interface, runs script= with its name, and
    downscript= when the VMM ends (here: on the missing kernel), inside a
    network namespace of the VMM's own. No NIC took it: QEMU's warning."""
    log = tmp_path / "log"
    for name in ("up", "down"):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\nip link show $1 > /dev/null && echo {name} $1 >> {log}\n")
        script.chmod(0o755)
    proc = subprocess.run(["unshare", "--net", our_vmm, "-netdev",
                           f"tap,id=n0,ifname=pdl0,script={tmp_path}/up,"
                           f"downscript={tmp_path}/down", "-kernel", "/nonexistent/bzImage"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    skip_if_stopped_at_kvm(proc.stderr)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "qemu-system-x86_64: warning: netdev n0 has no peer",
        "qemu-system-x86_64: could not open '/nonexistent/bzImage': No such file or directory",
    ], proc.stderr
    # The interface existed for both scripts.
    assert log.read_text() == "up pdl0\ndown pdl0\n"


@pytest.mark.parametrize("args,expect", [
    (["-netdev", "help"], "Available netdev backend types:\nsocket\ntap\n"),
    (["-nic", "model=help"], "Available NIC models:\n"),
    (["-help"], "-nic none|TYPE"),
])
def test_network_help(our_vmm, args, expect):
    proc = run(our_vmm, args)
    assert proc.returncode == 0 and expect in proc.stdout, proc.stdout + proc.stderr
