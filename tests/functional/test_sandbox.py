"""-sandbox on (docs/sandbox.md).

Locally (tiny guests on /dev/kvm): a machine with every device and backend
kind boots and exits under the sandbox; a forbidden system call, made on
purpose through the hidden x-test-forbidden= (main thread or vCPU), kills
the VMM by SIGSYS with the line naming the call; the options parse as
QEMU's. On the bench: Linux guests with disk and network traffic under
-sandbox on finish without a kill, and one runs under strace so that every
call each thread kind made is checked against the lists.
"""

import collections
import re
import signal
import subprocess
import sys
import time

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.net import HOST_ADDR, IFACE_OF, PREFIX, wait_for_iface
from vmm_process import require_local_kvm, skip_if_stopped_at_kvm

sys.path.insert(0, str(kvmhost.SCRIPTS))
sandbox_trace = __import__("sandbox-trace")

EXIT = ["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]
FORBIDDEN = re.compile(r"^qemu-system-x86_64: sandbox: forbidden system call (\w+) \((\d+)\)$",
                       re.M)


def tiny_args(tiny_kernels, tmp_path, append):
    """A tiny guest on a machine with every kind of device and backend that
    needs no privileges: IDE (aio=threads), virtio-blk (aio=native, and
    aio=io_uring on an I/O thread), e1000 on user networking, virtio-net on
    a socket netdev, a file chardev on a second UART."""
    disks = []
    for name in ("ide", "native", "uring"):
        image = tmp_path / f"{name}.raw"
        image.write_bytes(bytes(1 << 20))
        disks.append(image)
    return ["-accel", "kvm", "-m", "64M", "-smp", "2", "-nographic", "-no-reboot", *EXIT,
            "-object", "iothread,id=io0",
            "-drive", f"file={disks[0]},format=raw,if=ide,aio=threads",
            "-drive", f"file={disks[1]},format=raw,if=virtio,aio=native,cache=none",
            "-drive", f"file={disks[2]},format=raw,if=none,id=v2,aio=io_uring",
            "-device", "virtio-blk-pci,drive=v2,iothread=io0",
            "-netdev", "user,id=u0", "-device", "e1000,netdev=u0",
            "-netdev", "socket,id=s0,listen=127.0.0.1:0", "-device", "virtio-net-pci,netdev=s0",
            "-chardev", f"file,id=cf,path={tmp_path / 'uart.log'}",
            "-device", "isa-serial,chardev=cf", "-device", "pdl-testdev",
            "-kernel", str(tiny_kernels / "tiny.elf"), "-append", append]


def run(vmm, *args):
    proc = subprocess.run([str(vmm), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    skip_if_stopped_at_kvm(proc.stdout)
    return proc


@pytest.mark.parametrize("sandbox", [
    "on", "off",
    "on,obsolete=allow,elevateprivileges=allow,spawn=allow,resourcecontrol=allow",
    # spawn=deny: the vCPU threads start under it (clone3 refused, clone
    # with CLONE_THREAD allowed).
    "on,obsolete=deny,elevateprivileges=children,spawn=deny,resourcecontrol=deny",
])
def test_tiny_guest_with_every_backend_runs_under_the_sandbox(our_vmm, tiny_kernels, tmp_path,
                                                              sandbox):
    proc = run(our_vmm, *tiny_args(tiny_kernels, tmp_path, "smp fastpaths exit=3"),
               "-sandbox", sandbox)
    assert not FORBIDDEN.search(proc.stdout), proc.stdout
    assert "tiny: pdl coalesced pio after-clear applied=100 in-order=yes" in proc.stdout
    assert proc.returncode == (3 << 1) | 1, proc.stdout


@pytest.mark.parametrize("append,status", [("smp reboot exit=5", 5), ("s3 exit=0", 0)])
def test_reset_and_s3_rebuild_the_vm_under_the_sandbox(our_vmm, tiny_kernels, append, status):
    """A reset (and an S3 wake-up) recreates KVM's VM and reloads the
    kernel on the main loop, with every thread already confined."""
    proc = run(our_vmm, "-accel", "kvm", "-m", "64M", "-smp", "2", "-nographic", *EXIT,
               "-device", "pdl-testdev", "-sandbox", "on,spawn=deny",
               "-kernel", str(tiny_kernels / "tiny.elf"), "-append", append)
    assert not FORBIDDEN.search(proc.stdout), proc.stdout
    if "reboot" in append:
        assert proc.stdout.count("tiny: hello") == 2, proc.stdout
    else:
        assert "tiny: s3 resumed flag=Y" in proc.stdout, proc.stdout
    assert proc.returncode == (status << 1) | 1, proc.stdout


def test_sigterm_teardown_runs_under_the_sandbox(our_vmm, tiny_kernels, tmp_path):
    """Exit tears the machine down with the filters on: threads joined,
    backends closed, the pidfile unlinked."""
    pidfile = tmp_path / "vmm.pid"
    require_local_kvm()
    proc = subprocess.Popen([str(our_vmm), "-accel", "kvm", "-m", "64M", "-nographic",
                             "-pidfile", str(pidfile), "-sandbox", "on",
                             "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "hello"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(100):
        if pidfile.exists():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    proc.terminate()
    out, _ = proc.communicate(timeout=60)
    assert not FORBIDDEN.search(out), out
    assert "terminating on signal 15" in out, out
    assert proc.returncode == 0, out
    assert not pidfile.exists()


@pytest.mark.parametrize("thread,call,nr", [("main", "personality", 135),
                                            ("vcpu", "openat", 257)])
def test_forbidden_call_kills_with_its_name(our_vmm, tiny_kernels, tmp_path, thread, call, nr):
    # vcpu: openat is on the process list, not on the vCPU one.
    proc = run(our_vmm, *tiny_args(tiny_kernels, tmp_path, "hello exit=3"),
               "-sandbox", f"on,x-test-forbidden={thread}")
    assert proc.returncode == -signal.SIGSYS, proc.stdout
    assert FORBIDDEN.findall(proc.stdout) == [(call, str(nr))], proc.stdout
    # vCPU 0 dies before its first KVM_RUN: the guest never printed.
    assert "tiny: hello" not in proc.stdout


@pytest.mark.parametrize("value,message", [
    ("maybe", "Parameter 'enable' expects 'on' or 'off'"),
    ("on,obsolete=foo", "invalid argument for obsolete"),
    ("on,elevateprivileges=children,spawn=", "invalid argument for spawn"),
    ("on,elevateprivileges=root", "invalid argument for elevateprivileges"),
    ("on,resourcecontrol=yes", "invalid argument for resourcecontrol"),
    ("on,bogus=1", "Invalid parameter 'bogus'"),
])
def test_bad_sandbox_option_is_one_line_and_status_1(our_vmm, value, message):
    """QEMU's wording, after the option as given."""
    proc = run(our_vmm, "-sandbox", value, "-display", "none")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"qemu-system-x86_64: -sandbox {value}: {message}"]


def test_tap_downscript_is_refused_under_the_sandbox(our_vmm, tiny_kernels, tmp_path):
    """A downscript would run at exit under the allow list (and die)."""
    ifname = "sbx%d" % (abs(hash(str(tmp_path))) % 10000)
    add = subprocess.run(["ip", "tuntap", "add", "dev", ifname, "mode", "tap"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if add.returncode != 0:
        pytest.skip(f"cannot create a tap device here: {add.stdout.strip()}")
    try:
        proc = run(our_vmm, "-accel", "kvm", "-m", "64M", "-nographic", "-no-reboot", *EXIT,
                   "-netdev", f"tap,id=t0,ifname={ifname},script=no,downscript=/bin/true",
                   "-device", "virtio-net-pci,netdev=t0", "-sandbox", "on",
                   "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "hello exit=3")
        assert proc.returncode == 1, proc.stdout
        assert ("qemu-system-x86_64: -sandbox on: a tap netdev's downscript (/bin/true) cannot "
                "run under the sandbox at exit; use downscript=no") in proc.stdout
        assert "tiny: hello" not in proc.stdout
    finally:
        subprocess.run(["ip", "tuntap", "del", "dev", ifname, "mode", "tap"])


# ---- the bench: Linux guests with disk and network traffic ----

DISK_MB = 64
GUEST_LIMIT = 300
USER_NET = "10.0.3"

def nic_up(driver, addr):
    return wait_for_iface(driver) + f"ip addr add {addr}/{PREFIX} dev $IF; ip link set $IF up; "


def disk_pattern(dev):
    """8 MiB of random bytes written past the page cache, read back."""
    return (kvmhost.wait_for_disks(f"/dev/{dev}") +
            "dd if=/dev/urandom of=/tmp/p bs=1M count=8 2>/dev/null; "
            f"dd if=/tmp/p of=/dev/{dev} bs=1M conv=fsync 2>/dev/null; "
            "echo 3 > /proc/sys/vm/drop_caches; "
            f"dd if=/dev/{dev} of=/tmp/r bs=1M count=8 2>/dev/null; "
            f"cmp /tmp/p /tmp/r && echo disk-{dev}-ok; rm -f /tmp/r; ")


def guest_command(nics, disks, seconds):
    """Each NIC pings its peer and runs iperf3 both ways (tap) or one way
    (user networking, through slirp to the iperf3 server on L1's
    loopback); each disk takes a pattern."""
    cmd = IFACE_OF
    for driver, net in nics:
        cmd += nic_up(driver, f"{net}.15")
    cmd += "sleep 1; "
    for driver, net in nics:
        run = f"iperf3 -c {net}.2 -t{seconds} -fm"
        both = f"{run} && {run} -R" if net != USER_NET else run
        # slirp may not answer pings without ICMP sockets: tap only.
        ping = f"ping -c3 -W5 {net}.2 >/dev/null && " if net != USER_NET else ""
        cmd += f"{ping}{both} && echo net-{driver}-ok; "
    for dev in disks:
        cmd += disk_pattern(dev)
    return cmd + "echo sandbox-done"


def image(name):
    return f'truncate -s {DISK_MB}M "$WORK/{name}.raw"\n'


RAM_DISK = 'ram_disk 0 || exit 1\n'

# Under strace (-ff: a file per thread), every call of each thread kind
# after its filter went in, summed in L1 (busybox awk) as
#   sandbox-trace KIND CALL COUNT
# ioctl is left out (KVM_RUN would fill L1's memory): every filter allows it.
STRACE_WRAPPER = '''mkdir -p "$WORK/tr"
printf '#!/bin/sh\\nexec strace -f -ff -tt -qq -e trace=!ioctl -o %s/tr/t %s "$@"\\n' \\
    "$WORK" "$VMM" > "$WORK/vmm-strace"; chmod +x "$WORK/vmm-strace"
VMM="$WORK/vmm-strace"
'''
STRACE_SUMMARY = r'''MAIN=$(grep -l ' execve(' "$WORK"/tr/t.* | head -1)
T0=$(grep 'SECCOMP_FILTER_FLAG_TSYNC.* = 0$' "$MAIN" | head -1 | cut -d' ' -f1)
echo "sandbox-trace-threads $(ls "$WORK"/tr | wc -l) loaded-at=$T0"
for f in "$WORK"/tr/t.*; do
    if [ "$f" = "$MAIN" ]; then kind=main
    elif grep -q ' seccomp(.* = 0$' "$f"; then kind=vcpu
    else kind=other; fi
    awk -v kind=$kind -v t0="$T0" '
        kind == "main" && !on { if ($0 ~ /SECCOMP_FILTER_FLAG_TSYNC/ && $0 ~ / = 0$/) on = 1; next }
        kind == "vcpu" && !on { if ($0 ~ / seccomp\(/ && $0 ~ / = 0$/) on = 1; next }
        kind == "other" && $1 <= t0 { next }
        { n = $2; sub(/\(.*/, "", n); if (n ~ /^[a-z_0-9]+$/) c[n]++ }
        END { for (n in c) print "sandbox-trace", kind, n, c[n] }' "$f"
    rm -f "$f"
done
'''


def sandbox_fragment(vmm, name, *, nics, disks, drives, netdevs, setup="", seconds=3, strace=False):
    """One guest under -sandbox on with a tap (tap0, 10.0.2.2 on L1's side)."""
    args = l2_args(guest_command(nics, disks, seconds), smp=1,
                   extra=["-sandbox on", "-machine pc,device-lock=on",
                          "-object iothread,id=io0", *netdevs, *drives])
    script = (setup + (STRACE_WRAPPER if strace else "") +
              f"netns_create\ntap_create tap0 {HOST_ADDR}/{PREFIX}\n"
              'in_netns iperf3 -s -D -I "$WORK/iperf.pid"\n'
              f"guest_run {name} {GUEST_LIMIT} {args}\n"
              + (STRACE_SUMMARY if strace else ""))
    return Fragment(name, script, vmm, limit=GUEST_LIMIT + 120)


TAP = "tap,id=n0,ifname=tap0,script=no,downscript=no"


def fragments(vmm):
    return [
        # virtio: virtio-net over tap in user space, virtio-blk with
        # aio=io_uring on an I/O thread.
        sandbox_fragment(
            vmm, "sandbox_virtio", nics=[("virtio_net", "10.0.2")], disks=["vda"],
            setup=image("vda"),
            netdevs=["-netdev", TAP, "-device", "virtio-net-pci,netdev=n0"],
            drives=["-drive", '"file=$WORK/vda.raw,format=raw,if=none,id=d0,aio=io_uring"',
                    "-device", "virtio-blk-pci,drive=d0,iothread=io0"]),
        # legacy: e1000 over tap, IDE with aio=threads, and a virtio-blk
        # with aio=native on a RAM disk (O_DIRECT).
        sandbox_fragment(
            vmm, "sandbox_legacy", nics=[("e1000", "10.0.2")], disks=["sda", "vda"],
            setup=image("sda") + RAM_DISK,
            netdevs=["-netdev", TAP, "-device", "e1000,netdev=n0"],
            drives=["-drive", '"file=$WORK/sda.raw,format=raw,if=ide,aio=threads"',
                    "-drive", '"file=/dev/ram0,format=raw,if=virtio,aio=native,cache=none"']),
        # Everything at once under strace: virtio-net over tap with vhost,
        # e1000 on user networking, both disk kinds.
        sandbox_fragment(
            vmm, "sandbox_strace", nics=[("virtio_net", "10.0.2"), ("e1000", USER_NET)],
            disks=["vda", "sda"], setup=image("vda") + image("sda"), seconds=2, strace=True,
            netdevs=["-netdev", TAP + ",vhost=on", "-device", "virtio-net-pci,netdev=n0",
                     "-netdev", f"user,id=n1,net={USER_NET}.0/24",
                     "-device", "e1000,netdev=n1"],
            drives=["-drive", '"file=$WORK/vda.raw,format=raw,if=none,id=d0,aio=io_uring"',
                    "-device", "virtio-blk-pci,drive=d0,iothread=io0",
                    "-drive", '"file=$WORK/sda.raw,format=raw,if=ide,aio=threads"']),
    ]


def bench_batch(session):
    return fragments(session.our_vmm), {}


@pytest.mark.parametrize("name", ["sandbox_virtio", "sandbox_legacy", "sandbox_strace"])
def test_linux_disk_and_network_traffic_under_the_sandbox(runs, name):
    outcome = runs[name]
    guest = expect_guest(outcome, name, exit_status=0, contains=[r"^sandbox-done$"])
    assert not FORBIDDEN.search(guest.log), guest.log
    nics = {"sandbox_virtio": ["virtio_net"], "sandbox_legacy": ["e1000"],
            "sandbox_strace": ["virtio_net", "e1000"]}[name]
    disks = {"sandbox_virtio": ["vda"], "sandbox_legacy": ["sda", "vda"],
             "sandbox_strace": ["vda", "sda"]}[name]
    for nic in nics:
        assert re.search(rf"^net-{nic}-ok$", guest.log, re.M), guest.log
    for disk in disks:
        assert re.search(rf"^disk-{disk}-ok$", guest.log, re.M), guest.log


def test_every_call_traced_under_linux_is_on_its_threads_list(runs):
    """The strace of the whole boot, by thread kind, against the lists: a
    call the sandbox lacks would have killed the guest above; this names
    them all at once, and shows the lists are what the VMM uses."""
    outcome = runs["sandbox_strace"]
    traced = collections.defaultdict(collections.Counter)
    for kind, call, count in re.findall(r"^sandbox-trace (\w+) (\w+) (\d+)$", outcome.output,
                                        re.M):
        traced[kind][call] += int(count)
    assert traced["vcpu"] and traced["main"], outcome.output
    lists = sandbox_trace.lists()
    vcpu = lists["vcpu_syscalls"] | sandbox_trace.THREAD_RULES
    process = set().union(*lists.values()) | sandbox_trace.THREAD_RULES
    missing = {kind: sorted(set(calls) - (vcpu if kind == "vcpu" else process))
               for kind, calls in traced.items()}
    print({kind: dict(calls) for kind, calls in traced.items()})
    assert not any(missing.values()), missing
