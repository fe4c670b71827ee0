"""The human monitor end to end, side by side with Debian's QEMU 7.2.

A tiny guest (tests/functional/tiny, halting after its report) runs under
each VMM with the monitor on -monitor stdio (pipes, as a script drives it),
on -serial mon:stdio (a pty, as a person at a terminal: Ctrl-a c switches
between the guest's console and the monitor) and on a unix socket. The
lines that matter (banner, answers, error messages, Ctrl-a h) must be the
same; only the version number in the banner may differ.

Commands whose QMP command is written on another branch (query-status,
quit...) answer "The command ... has not been found" on a build without
it: those checks are skipped there, not passed, and run once merged.
"""

import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import time

import pytest

from vmm_process import NO_KVM_ERRORS, require_local_kvm

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
BANNER = re.compile(r"^QEMU 7\.2\.\d+ monitor - type 'help' for more information$")
CTRL_A = b"\x01"


@pytest.fixture(scope="module")
def vmm_cmd(our_vmm, tiny_kernels):
    """vmm_cmd(name, *args): the command line of a tiny guest under that VMM."""
    elf = str(tiny_kernels / "tiny.elf")
    accels = {"ours": "kvm"}
    if REFERENCE:
        accels["reference"] = reference_accel(elf)

    def make(name, *args):
        if name not in accels:
            pytest.skip("Debian's qemu-system-x86 is not installed")
        if name == "ours":
            require_local_kvm()
        binary = our_vmm if name == "ours" else REFERENCE
        extra = ["-display", "none"] if name == "reference" else []
        return [binary, "-accel", accels[name], "-M", "pc", "-m", "64M", "-nodefaults",
                *extra, "-kernel", elf, *args]
    return make


def reference_accel(elf):
    """kvm if Debian's QEMU can use this host's /dev/kvm, else tcg."""
    probe = subprocess.run([REFERENCE, "-accel", "kvm", "-M", "pc", "-m", "64M", "-nodefaults",
                            "-display", "none", "-no-reboot", "-device",
                            "isa-debug-exit,iobase=0xf4,iosize=4", "-kernel", elf,
                            "-append", "exit=0"], capture_output=True, text=True, timeout=60)
    # Status 1 is the guest's exit=0, unless KVM itself failed.
    kvm_failed = any(error in probe.stderr for error in NO_KVM_ERRORS)
    return "kvm" if probe.returncode == 1 and not kvm_failed else "tcg"


def screen_lines(raw):
    """What a terminal shows, line by line: the echo's redraws resolved to
    the final line (everything before the last erase-to-end), no CRs."""
    text = raw.decode("utf-8", "replace").replace("\r", "")
    return [line.rsplit("\x1b[K", 1)[-1] for line in text.split("\n")]


def answer(raw):
    """The lines a command printed: between its echo and the next prompt."""
    lines = screen_lines(raw)
    return [line for line in lines[1:] if line and not line.startswith("(qemu)")]


def skip_if_missing(lines, command):
    if any("has not been found" in line for line in lines):
        pytest.skip(f"QMP command {command} is not in this build (another branch)")


class Terminal:
    """A VMM with its stdin/stdout on a pty (mode="pty") or pipes."""

    def __init__(self, argv, mode):
        if mode == "pty":
            self.pid, self.fd = pty.fork()
            if self.pid == 0:
                os.execv(argv[0], argv)
            self.write_fd = self.fd
            self.proc = None
        else:
            # stderr apart: warnings must not land in the middle of answers.
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)
            self.fd = self.proc.stdout.fileno()
            self.write_fd = self.proc.stdin.fileno()
        self.buf = b""

    def read_until(self, pattern, timeout=30):
        """Everything up to and including the first match of pattern (bytes
        regex), consumed; fails with what came if it does not come."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.buf)
            if m:
                got, self.buf = self.buf[:m.end()], self.buf[m.end():]
                return got
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} within {timeout} s; got {self.buf!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:     # pty closed: the VMM exited
                    data = b""
                if not data:
                    raise AssertionError(f"VMM exited waiting for {pattern!r}; got {self.buf!r}")
                self.buf += data

    def send(self, data):
        os.write(self.write_fd, data)

    def command(self, line, enter=b"\n"):
        """Run one monitor command; the lines it printed."""
        self.send(line.encode() + enter)
        return answer(self.read_until(rb"\(qemu\) "))

    def wait_exit(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc:
                if self.proc.poll() is not None:
                    return self.proc.returncode
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError("the VMM did not exit")

    def close(self):
        if self.proc:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
        else:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(self.fd)


@pytest.fixture
def terminals():
    opened = []

    def start(argv, mode):
        t = Terminal(argv, mode)
        opened.append(t)
        return t
    yield start
    for t in opened:
        t.close()


def check_commands_without_a_machine(term, enter=b"\n"):
    """The answers that need no QMP command of another branch."""
    assert term.command("help stop", enter) == ["stop|s  -- stop emulation"]
    assert term.command("? cont", enter) == ["cont|c  -- resume emulation"]
    assert term.command("help info version", enter) == [
        "info version  -- show the version of QEMU"]
    assert term.command("foo", enter) == ["unknown command: 'foo'"]
    assert term.command("info foo", enter) == ["unknown command: 'info foo'"]
    assert term.command("stop x", enter) == [
        "stop|s: extraneous characters at the end of line",
        'Try "help stop" for more information']
    assert term.command("eject", enter) == [
        "eject: block device name expected", 'Try "help eject" for more information']
    help_lines = term.command("help", enter)
    for name in ("cont|c ", "eject [-f] device ", "quit|q ", "stop|s ", "system_reset ",
                 "system_powerdown ", "info [subcommand] "):
        assert any(line.startswith(name) for line in help_lines), help_lines


def check_status_and_quit(term, enter=b"\n"):
    status = term.command("info status", enter)
    skip_if_missing(status, "query-status")
    assert status == ["VM status: running"]
    assert term.command("stop", enter) == []
    assert term.command("info status", enter) == ["VM status: paused"]
    assert term.command("c", enter) == []
    assert term.command("info status", enter) == ["VM status: running"]
    term.send(b"quit" + enter)
    assert term.wait_exit() == 0


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_monitor_stdio_on_pipes(vmm, vmm_cmd, terminals):
    """-monitor stdio driven by a script: banner, prompt, answers."""
    term = terminals(vmm_cmd(vmm, "-monitor", "stdio"), "pipes")
    greeting = screen_lines(term.read_until(rb"\(qemu\) "))
    assert BANNER.match(greeting[0]), greeting
    assert greeting[1] == "(qemu) "
    check_commands_without_a_machine(term)
    check_status_and_quit(term)


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_line_editing_echo_is_qemus(vmm, vmm_cmd, terminals):
    """Backspace, cursor keys and history: the bytes echoed are QEMU's."""
    term = terminals(vmm_cmd(vmm, "-monitor", "stdio"), "pipes")
    term.read_until(rb"\(qemu\) ")
    term.send(b"help sx\x7f" b"top\n")
    raw = term.read_until(rb"\(qemu\) ")
    assert raw.startswith(b"h\x1b[K\x1b[Dhe\x1b[K\x1b[D\x1b[Dhel\x1b[K"), raw
    assert b"\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x1b[Dhelp s\x1b[K" in raw, raw
    assert answer(raw) == ["stop|s  -- stop emulation"]
    # Up: the last line again; Left twice, insert, then Enter.
    term.send(b"\x1b[A\x1b[D\x1b[Dx\n")
    raw = term.read_until(rb"\(qemu\) ")
    assert raw.startswith(b"help stop\x1b[K\x1b[D\x1b[D"), raw
    assert answer(raw) == ["unknown command: 'stxop'"]


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_serial_mon_stdio_ctrl_a_c(vmm, vmm_cmd, terminals):
    """-serial mon:stdio on a terminal: the guest's console first; Ctrl-a c
    greets with the banner, commands run, Ctrl-a c goes back (the monitor
    ends its line), Ctrl-a h prints QEMU's help, Ctrl-a c again shows a
    bare prompt."""
    term = terminals(vmm_cmd(vmm, "-serial", "mon:stdio"), "pty")
    term.read_until(rb"tiny: ram=\d+\r\n", timeout=60)
    term.send(CTRL_A + b"c")
    greeting = screen_lines(term.read_until(rb"\(qemu\) "))
    assert BANNER.match(greeting[0]), greeting
    check_commands_without_a_machine(term, enter=b"\r")

    term.send(CTRL_A + b"c")
    assert term.read_until(rb"\r\r\n") == b"\r\r\n"
    term.send(CTRL_A + b"h")
    shown = term.read_until(rb"C-a C-a  sends C-a\r\n\r")
    lines = [line.strip("\r") for line in shown.decode().split("\n") if line.strip("\r")]
    # QEMU also lists C-a s, t and b, which this VMM does not have.
    expected = ["C-a h    print this help", "C-a x    exit emulator",
                "C-a c    switch between console and monitor", "C-a C-a  sends C-a"]
    assert [line for line in lines if line in expected] == expected, shown
    term.send(CTRL_A + b"c")
    assert term.read_until(rb"\(qemu\) ") == b"(qemu) "
    check_status_and_quit(term, enter=b"\r")


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_monitor_on_unix_socket(vmm, vmm_cmd, tmp_path):
    """-monitor unix:PATH,server=on,wait=off: a client gets the banner and
    answers (needs the socket backend of the qmp-server branch on ours)."""
    path = str(tmp_path / "hmp.sock")
    argv = vmm_cmd(vmm, "-monitor", f"unix:{path},server=on,wait=off")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if proc.poll() is not None:
                err = proc.stderr.read().decode()
                if vmm == "ours" and "not supported" in err:
                    pytest.skip(f"no unix socket backend in this build: {err.strip()}")
                raise AssertionError(f"VMM exited: {err}")
            assert time.monotonic() < deadline, "no monitor socket"
            time.sleep(0.05)
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(30)
        sock.connect(path)
        buf = b""

        def until_prompt():
            nonlocal buf
            while b"(qemu) " not in buf:
                data = sock.recv(4096)
                assert data, f"monitor closed: {buf!r}"
                buf += data
            got, buf = buf.split(b"(qemu) ", 1)
            return got + b"(qemu) "

        assert BANNER.match(screen_lines(until_prompt())[0])
        sock.sendall(b"help stop\n")
        assert answer(until_prompt()) == ["stop|s  -- stop emulation"]
        sock.sendall(b"info status\n")
        status = answer(until_prompt())
        skip_if_missing(status, "query-status")
        assert status == ["VM status: running"]
        sock.sendall(b"quit\n")
        assert proc.wait(timeout=30) == 0
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stderr.close()


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_human_monitor_command_over_qmp(vmm, vmm_cmd, tmp_path):
    """human-monitor-command returns the monitor's text ("\\r\\n" line ends);
    a failing command is text, not a QMP error; a bad cpu-index is one
    (needs -qmp of the qmp-server branch on ours)."""
    from qmp_client import QMPClient, QMPError
    path = str(tmp_path / "qmp.sock")
    proc = subprocess.Popen(vmm_cmd(vmm, "-qmp", f"unix:{path},server=on,wait=off"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if proc.poll() is not None:
                err = proc.stderr.read().decode()
                if vmm == "ours" and "-qmp" in err:
                    pytest.skip(f"no QMP server in this build: {err.strip()}")
                raise AssertionError(f"VMM exited: {err}")
            assert time.monotonic() < deadline, "no QMP socket"
            time.sleep(0.05)
        with QMPClient.wait_connect(path) as qmp:
            qmp.negotiate()

            def hmp(line, **extra):
                return qmp.cmd("human-monitor-command", **{"command-line": line}, **extra)
            assert hmp("help stop") == "stop|s  -- stop emulation\r\n"
            assert hmp("stop x") == ("stop|s: extraneous characters at the end of line\r\n"
                                     'Try "help stop" for more information\r\n')
            assert hmp("foo") == "unknown command: 'foo'\r\n"
            # eject is the qmp-block branch's: checked where it exists.
            eject = hmp("eject nosuch")
            if "has not been found" not in eject:
                assert eject == "Error: Device 'nosuch' not found\r\n"
            with pytest.raises(QMPError) as bad:
                hmp("info cpus", **{"cpu-index": -1})
            assert (bad.value.error_class, bad.value.desc) == (
                "GenericError", "Parameter 'cpu-index' expects a CPU number")
            cpus = hmp("info cpus")
            if "has not been found" in cpus:
                pytest.skip("query-cpus-fast is not in this build (another branch)")
            assert re.fullmatch(r"\* CPU #0: thread_id=\d+\r\n", cpus), cpus
            # One vCPU: index 1 is not one.
            with pytest.raises(QMPError) as bad:
                hmp("info cpus", **{"cpu-index": 1})
            assert bad.value.desc == "Parameter 'cpu-index' expects a CPU number"
            assert hmp("info status") == "VM status: running\r\n"
            assert hmp("stop") == ""
            assert hmp("info status") == "VM status: paused\r\n"
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_ctrl_a_x_terminates(vmm, vmm_cmd, terminals):
    """Ctrl-a x on mon:stdio: QEMU's line on the console, exit status 0."""
    term = terminals(vmm_cmd(vmm, "-serial", "mon:stdio"), "pty")
    term.read_until(rb"tiny: ram=\d+\r\n", timeout=60)
    term.send(CTRL_A + b"x")
    assert term.read_until(rb"QEMU: Terminated\r\n\r").endswith(b"QEMU: Terminated\r\n\r")
    assert term.wait_exit() == 0


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_guest_console_flows_while_the_monitor_has_focus(vmm, vmm_cmd, terminals):
    """The guest suspends to S3 and wakes by the RTC alarm seconds later;
    the monitor has the focus meanwhile. What the guest prints on waking
    still reaches the terminal (QEMU's mux writes every frontend's output
    whatever the focus), and while asleep the VM is "paused (suspended)"."""
    term = terminals(vmm_cmd(vmm, "-serial", "mon:stdio", "-no-reboot", "-device",
                             "isa-debug-exit,iobase=0xf4,iosize=4", "-append", "s3 exit=0"),
                     "pty")
    term.read_until(rb"tiny: suspending to S3\r\n", timeout=60)
    term.send(CTRL_A + b"c")
    greeting = screen_lines(term.read_until(rb"\(qemu\) "))
    assert BANNER.match(greeting[-2]), greeting
    # The guest prints before it writes SLP_EN: ask until the suspend is
    # seen (the RTC alarm wakes it 4-5 s after it armed it).
    deadline = time.monotonic() + 4
    while True:
        status = term.command("info status", b"\r")
        if status != ["VM status: running"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == ["VM status: paused (suspended)"]
    term.read_until(rb"tiny: s3 resumed flag=Y", timeout=30)
    # The resume code exits through isa-debug-exit with 0: status 1.
    assert term.wait_exit() == 1


def free_loopback_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_make_taps():
    return os.geteuid() == 0 and os.access("/dev/net/tun", os.R_OK | os.W_OK)


def info_devices(tmp_path, tap_name, port):
    """The same NICs, backends, disk and devices for both VMMs."""
    disk = tmp_path / "disk.img"
    with open(disk, "wb") as f:
        f.truncate(1 << 20)
    args = ["-netdev", "user,id=n0", "-device", "e1000,netdev=n0",
            "-netdev", f"socket,id=s0,listen=127.0.0.1:{port}",
            "-device", "virtio-net-pci,netdev=s0,id=vn",
            "-netdev", f"socket,id=s1,connect=127.0.0.1:{port}", "-device", "e1000,netdev=s1",
            "-drive", f"file={disk},format=raw,if=none,id=d0",
            "-device", "ide-hd,drive=d0,bus=ide.0",
            "-device", "isa-serial", "-device", "pci-testdev"]
    if tap_name:
        args += ["-netdev", f"tap,id=t0,ifname={tap_name},script=no,downscript=no"]
    return args


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_info_network(vmm, vmm_cmd, terminals, tmp_path):
    """info network: every backend kind's line as QEMU 7.2 spells it, the
    netdev no NIC took first, then each NIC and " \\ " its backend."""
    tap = f"hmpi{os.getpid() % 100000}" if can_make_taps() else None
    port = free_loopback_port()
    term = terminals(vmm_cmd(vmm, "-monitor", "stdio", *info_devices(tmp_path, tap, port)),
                     "pipes")
    term.read_until(rb"\(qemu\) ")
    # The listener takes its peer on the main loop, a moment after start.
    deadline = time.monotonic() + 10
    while True:
        lines = term.command("info network")
        if any("connection from" in line for line in lines) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expected = [
        "e1000.0: index=0,type=nic,model=e1000,macaddr=52:54:00:12:34:56",
        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off",
        "vn: index=0,type=nic,model=virtio-net-pci,macaddr=52:54:00:12:34:57",
        "LISTENER",
        "e1000.1: index=0,type=nic,model=e1000,macaddr=52:54:00:12:34:58",
        f" \\ s1: index=0,type=socket,socket: connect to 127.0.0.1:{port}",
    ]
    if tap:
        expected.insert(0, f"t0: index=0,type=tap,ifname={tap},script=no,downscript=no")
    assert len(lines) == len(expected), lines
    for line, want in zip(lines, expected):
        if want == "LISTENER":
            assert re.fullmatch(r" \\ s0: index=0,type=socket,socket: connection from "
                                r"127\.0\.0\.1:\d+", line), lines
        else:
            assert line == want, lines


def qtree_blocks(lines):
    """info qtree as (dev or bus line, the lines under it up to the next
    dev or bus line), BAR addresses reduced to the BAR's size (ours and
    QEMU's firmware place BARs differently; an unplaced BAR shows
    address -1, and QEMU prints address + size - 1 either way)."""
    blocks = []
    for line in lines:
        m = re.fullmatch(r"(\s*bar \d+: \S+) at 0x([0-9a-f]+) \[0x([0-9a-f]+)\]", line)
        if m:
            size = (int(m.group(3), 16) - int(m.group(2), 16) + 1) % (1 << 64)
            line = f"{m.group(1)} size 0x{size:x}"
        if re.match(r"\s*(dev|bus): ", line):
            blocks.append((line, set()))
        elif blocks:
            blocks[-1][1].add(line)
    return blocks


# What both print, device by device in QEMU's order (a bus lists its newest
# device first). docs/monitor.md lists what only QEMU prints.
QTREE_EXPECTED = [
    ("bus: main-system-bus", ["  type System"]),
    ('  dev: i440FX-pcihost, id ""', []),
    ("    bus: pci.0", ["      type PCI"]),
    ('      dev: pci-testdev, id ""', [
        "        addr = 05.0",
        "        class Class 00ff, addr 00:05.0, pci id 1b36:0005 (sub 1af4:1100)",
        "        bar 0: mem size 0x1000", "        bar 1: i/o size 0x100"]),
    ('      dev: e1000, id ""', [
        '        mac = "52:54:00:12:34:58"', '        netdev = "s1"', "        addr = 04.0",
        "        class Ethernet controller, addr 00:04.0, pci id 8086:100e (sub 1af4:1100)",
        "        bar 0: mem size 0x20000", "        bar 1: i/o size 0x40"]),
    ('      dev: virtio-net-pci, id "vn"', [
        '        disable-legacy = "off"', "        disable-modern = false",
        "        ioeventfd = true", "        vectors = 4 (0x4)", "        addr = 03.0",
        "        class Ethernet controller, addr 00:03.0, pci id 1af4:1000 (sub 1af4:0001)",
        "        bar 0: i/o size 0x20", "        bar 1: mem size 0x1000",
        "        bar 4: mem size 0x4000"]),
    ("        bus: virtio-bus", ["          type virtio-pci-bus"]),
    ('          dev: virtio-net-device, id ""', [
        '            mac = "52:54:00:12:34:57"', '            netdev = "s0"',
        "            mq = false", "            rx_queue_size = 256 (0x100)",
        "            tx_queue_size = 256 (0x100)", "            host_mtu = 0 (0x0)",
        "            csum = true", "            ctrl_vq = true", "            guest_announce = true"]),
    ('      dev: e1000, id ""', [
        '        mac = "52:54:00:12:34:56"', '        netdev = "n0"', "        addr = 02.0",
        "        class Ethernet controller, addr 00:02.0, pci id 8086:100e (sub 1af4:1100)"]),
    ('      dev: piix3-ide, id ""', [
        "        addr = 01.1",
        "        class IDE controller, addr 00:01.1, pci id 8086:7010 (sub 1af4:1100)",
        "        bar 4: i/o size 0x10"]),
    ("        bus: ide.1", ["          type IDE"]),
    ("        bus: ide.0", ["          type IDE"]),
    ('          dev: ide-hd, id ""', [
        '            drive = "d0"', '            model = ""', '            serial = "QM00001"',
        '            ver = "2.5+"', "            unit = 0 (0x0)"]),
    ('      dev: PIIX3, id ""', [
        "        addr = 01.0",
        "        class ISA bridge, addr 00:01.0, pci id 8086:7000 (sub 1af4:1100)"]),
    ("        bus: isa.0", ["          type ISA"]),
    ('          dev: isa-serial, id ""', [
        "            index = 0 (0x0)", "            iobase = 1016 (0x3f8)",
        "            irq = 4 (0x4)"]),
    ('          dev: i8042, id ""', ["            kbd-irq = 1 (0x1)", "            mouse-irq = 12 (0xc)"]),
    ('          dev: mc146818rtc, id ""', [
        "            iobase = 112 (0x70)", "            irq = 8 (0x8)"]),
    ('      dev: i440FX, id ""', [
        "        addr = 00.0",
        "        class Host bridge, addr 00:00.0, pci id 8086:1237 (sub 1af4:1100)"]),
    ('  dev: fw_cfg_io, id ""', ["    dma_enabled = true"]),
]


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_info_qtree(vmm, vmm_cmd, terminals, tmp_path):
    """info qtree: the buses and devices QEMU shows for the same command
    line, in its order, with the lines both print (properties we have, the
    PCI header lines, BAR sizes)."""
    port = free_loopback_port()
    term = terminals(vmm_cmd(vmm, "-monitor", "stdio", *info_devices(tmp_path, None, port)),
                     "pipes")
    term.read_until(rb"\(qemu\) ")
    blocks = qtree_blocks(term.command("info qtree"))
    # QEMU has more devices (PIIX4_PM, the ISA devices of the board...):
    # ours must appear in its order, each with the lines expected of it.
    check_qtree(blocks, QTREE_EXPECTED)
    assert term.command("help info qtree") == ["info qtree  -- show device tree"]
    assert term.command("help info network") == ["info network  -- show the network state"]


def check_qtree(blocks, expected):
    """Each (head, lines) of expected in blocks, in that order, with at
    least those lines under it."""
    at = 0
    for head, lines in expected:
        while at < len(blocks) and blocks[at][0] != head:
            at += 1
        assert at < len(blocks), f"{head!r} missing or out of order in {blocks}"
        missing = [line for line in lines if line not in blocks[at][1]]
        assert not missing, (head, missing, sorted(blocks[at][1]))
        at += 1


# A second machine: what a device chose when it was realized is printed as
# it chose it (virtio-blk's queues, one per vCPU, and their vectors; the
# transport's legacy interface; an IDE drive's serial number), a -serial
# port is an isa-serial of its own, and the disk and CD sit on their channel.
QTREE_CHOSEN = [
    ('  dev: kvm-ioapic, id ""', ["    gsi_base = 0 (0x0)"]),
    ('  dev: i440FX-pcihost, id ""', []),
    ('      dev: virtio-blk-pci, id "vb"', [
        '        disable-legacy = "off"', "        vectors = 3 (0x3)", "        addr = 03.0",
        "        class SCSI controller, addr 00:03.0, pci id 1af4:1001 (sub 1af4:0002)"]),
    ("        bus: virtio-bus", ["          type virtio-pci-bus"]),
    ('          dev: virtio-blk-device, id ""', [
        '            drive = "d0"', '            rerror = "auto"', '            werror = "stop"',
        "            num-queues = 2 (0x2)",
        "            queue-size = 256 (0x100)", '            serial = "vbs"']),
    ('      dev: e1000, id "nic"', [
        '        mac = "52:54:00:aa:bb:cc"', '        netdev = "n0"', "        addr = 02.0"]),
    ("        bus: ide.1", ["          type IDE"]),
    ('          dev: ide-cd, id "cd"', [
        '            drive = ""', '            rerror = "auto"', '            werror = "auto"',
        '            serial = "QM00004"', '            ver = "2.5+"',
        "            unit = 1 (0x1)"]),
    ("        bus: ide.0", ["          type IDE"]),
    ('          dev: ide-hd, id ""', [
        '            drive = "d1"', '            rerror = "stop"', '            werror = "report"',
        '            serial = "disk1"', '            ver = "1.0"',
        "            unit = 0 (0x0)"]),
    ("        bus: isa.0", ["          type ISA"]),
    ('          dev: isa-serial, id ""', [
        "            index = 0 (0x0)", "            iobase = 1016 (0x3f8)",
        "            irq = 4 (0x4)"]),
    ('          dev: kvm-pit, id ""', [
        "            iobase = 64 (0x40)", '            lost_tick_policy = "delay"']),
    ('          dev: kvm-i8259, id ""', [
        "            iobase = 160 (0xa0)", "            elcr_addr = 1233 (0x4d1)",
        "            elcr_mask = 222 (0xde)", "            master = false"]),
    ('          dev: kvm-i8259, id ""', [
        "            iobase = 32 (0x20)", "            elcr_addr = 1232 (0x4d0)",
        "            elcr_mask = 248 (0xf8)", "            master = true"]),
]


@pytest.mark.parametrize("vmm", ["ours", "reference"])
def test_info_qtree_chosen_values(vmm, vmm_cmd, terminals, tmp_path):
    """info qtree shows the values a device chose (and the user's, where
    given) and the virtio-bus under each virtio PCI function, as QEMU."""
    disks = []
    for name in ("d0", "d1"):
        disks.append(tmp_path / f"{name}.img")
        with open(disks[-1], "wb") as f:
            f.truncate(1 << 20)
    cmd = vmm_cmd(
        vmm, "-monitor", "stdio", "-smp", "2", "-serial", "null",
        "-netdev", "user,id=n0", "-device", "e1000,netdev=n0,id=nic,mac=52:54:00:aa:bb:cc",
        "-drive", f"file={disks[0]},format=raw,if=none,id=d0",
        "-device", "virtio-blk-pci,drive=d0,id=vb,serial=vbs,werror=stop",
        "-drive", f"file={disks[1]},format=raw,if=none,id=d1",
        "-device", "ide-hd,drive=d1,bus=ide.0,serial=disk1,ver=1.0,rerror=stop,werror=report",
        "-device", "ide-cd,id=cd,bus=ide.1,unit=1")
    term = terminals(cmd, "pipes")
    term.read_until(rb"\(qemu\) ")
    blocks = qtree_blocks(term.command("info qtree"))
    # Under TCG QEMU emulates the PIC, IOAPIC and PIT itself (other names).
    in_kernel = cmd[cmd.index("-accel") + 1] == "kvm"
    check_qtree(blocks, [b for b in QTREE_CHOSEN if in_kernel or "kvm-" not in b[0]])
    # The transport's switches are on the function, not on its device.
    device = dict(blocks)['          dev: virtio-blk-device, id ""']
    names = {line.split(" = ")[0].strip() for line in device}
    assert not names & {"disable-legacy", "disable-modern", "ioeventfd", "vectors"}, names
