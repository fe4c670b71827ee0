"""The binary's command line as a user meets it: informational options exit
0, every mistake exits 1 with one clear line on stderr that names the
option. No guest needed: errors are found before any vCPU runs."""

import subprocess

import pytest

BAD = [
    (["-foo"], "-foo"),
    (["-m"], "-m"),
    (["-m", "lots"], "-m lots"),
    (["-smp", "3,sockets=2,cores=2,threads=1"], "-smp"),
    (["-machine", "pc,turbo=on"], "turbo"),
    (["-machine", "q35"], "q35"),
    (["-accel", "tcg"], "-accel tcg"),
    (["-serial", "pty"], "-serial pty"),
    (["-device", "e1000"], "-device e1000"),
    (["-device", "isa-debug-exit,iosize=3"], "iosize"),
    (["-initrd", "x"], "-initrd"),
    (["-cpu", "qemu64,+nosuchfeature", "-kernel", "/dev/null"], "nosuchfeature"),
    (["-kernel", "/nonexistent/bzImage"], "/nonexistent/bzImage"),
    (["-kernel", "/etc/hostname"], "/etc/hostname"),
    (["-kernel", "/dev/null", "-m", "64M", "-pidfile", "/nonexistent/dir/pid"], "-pidfile"),
]


def run(vmm, args):
    return subprocess.run([vmm, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=30)


@pytest.mark.parametrize("args,named", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_command_line_exits_1_with_one_line(our_vmm, args, named):
    proc = run(our_vmm, args)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("qemu-system-x86_64: ") and named in lines[0], proc.stderr


@pytest.mark.parametrize("args,expect", [
    (["-version"], "QEMU emulator version"),
    (["--version"], "QEMU emulator version"),
    (["-h"], "-kernel"),
    (["-machine", "help"], "pc"),
    (["-device", "help"], "isa-debug-exit"),
    (["-cpu", "help"], "qemu64"),
])
def test_informational_options_exit_0(our_vmm, args, expect):
    proc = run(our_vmm, args)
    assert proc.returncode == 0 and expect in proc.stdout, proc.stdout + proc.stderr
