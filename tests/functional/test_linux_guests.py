"""Debian's Linux kernel under our VMM, on a KVM host (hardware or the nested
bench): boot to the kit's marker with 1 and 2 vCPUs in both lock modes, the
memory and CPU count the guest sees, a command's output, reboot with
-no-reboot, a long kernel command line, the lock statistics, and the page
size KVM maps guest RAM with."""

import re

import pytest

from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.output import line_value

REPORT = ("echo cpus=$(nproc); grep MemTotal /proc/meminfo; "
          "echo cmdline=$(cat /proc/cmdline | wc -c); echo hello-from-linux; exit 5")
LONG_WORD = "kit.padding=" + "x" * 300      # pushes the command line past 255 bytes

# CMOS byte 0x40 survives a reset (as on a PC), so the guest can tell its
# first boot from the second: the first marks CMOS and reboots, the second
# reports and ends. /dev/port offsets are I/O ports: 112 = 0x70, 113 = 0x71.
REBOOT_TWICE = (
    "cmos_index() { printf '\\100' | dd of=/dev/port bs=1 seek=112 count=1 conv=notrunc 2>/dev/null; }; "
    "cmos_index; mark=$(dd if=/dev/port bs=1 skip=113 count=1 2>/dev/null | od -An -tx1 | tr -d ' '); "
    "if [ \"$mark\" = 5a ]; then echo second-boot; exit 0; fi; "
    "cmos_index; printf Z | dd of=/dev/port bs=1 seek=113 count=1 conv=notrunc 2>/dev/null; "
    "echo first-boot; reboot -f")


# The guest fills 64 MiB of its page cache, then waits while L1 reads how
# KVM maps its RAM: debugfs' per-VM pages_4k and pages_2m (leaves of the
# nested page tables by size), printed as PAGES_4K= and PAGES_2M= lines.
FILL_AND_WAIT = "dd if=/dev/zero of=/fill bs=1M count=64 2>/dev/null; echo ram-filled; sleep 600"


def page_sizes(name, vmm, *, thp, limit=180):
    args = l2_args(FILL_AND_WAIT, smp=1,
                   extra=[f"-machine pc,x-ram-thp={thp}"])
    # The fragment's status is the script's: the guest is killed once read.
    script = (
        "mount -t debugfs none /sys/kernel/debug 2>/dev/null\n"
        "echo THP_MODE=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null | tr -d ' ')\n"
        f"guest_start pages {limit} {args}\n"
        f"if guest_wait_for pages ram-filled {limit}; then\n"
        "    vm=$(ls -d /sys/kernel/debug/kvm/\"$(cat \"$WORK/pages.pid\")\"-* 2>/dev/null | head -n1)\n"
        "    if [ -f \"$vm/pages_2m\" ]; then\n"
        "        echo PAGES_4K=$(cat \"$vm/pages_4k\"); echo PAGES_2M=$(cat \"$vm/pages_2m\")\n"
        "    else\n"
        "        echo PAGES=unavailable\n"
        "    fi\n"
        "fi\n"
        "kill -KILL \"$(cat \"$WORK/pages.pid\")\"\n"
        "guest_wait pages\n"
        "true\n")
    return Fragment(name, script, vmm, limit=limit + 30)


def boot(name, vmm, *, smp, lock, command=REPORT, append="", limit=180, no_reboot=True,
         kernel="bzImage", extra=()):
    args = l2_args(command, smp=smp,
                   extra=[f"-machine pc,device-lock={lock},lock-stats=on", *extra],
                   append=f"kit.halt=reboot {append}", no_reboot=no_reboot, kernel=kernel)
    return Fragment(name, f"guest_run boot {limit} {args}", vmm, limit=limit + 30)


def bench_batch(session):
    our_vmm = session.our_vmm
    frags = [
        boot("smp1_on", our_vmm, smp=1, lock="on"),
        boot("smp2_on", our_vmm, smp=2, lock="on"),
        boot("smp4_on", our_vmm, smp=4, lock="on"),
        boot("smp1_off", our_vmm, smp=1, lock="off"),
        # The uncompressed vmlinux through its PVH entry point.
        boot("pvh_smp2", our_vmm, smp=2, lock="on", kernel="vmlinux"),
        # -cpu reaches the guest's CPUID.
        boot("cpu_model", our_vmm, smp=1, lock="on", extra=["-cpu qemu64,+popcnt,vendor=PdlTestCPU42"],
             command="grep -m1 vendor_id /proc/cpuinfo; grep -m1 -o -w popcnt /proc/cpuinfo; exit 0"),
        boot("smp2_off", our_vmm, smp=2, lock="off"),
        boot("long_cmdline", our_vmm, smp=1, lock="on", append=LONG_WORD,
             command="cat /proc/cmdline"),
        # A guest reboot under -no-reboot ends the VMM with status 0.
        boot("reboot", our_vmm, smp=1, lock="on", command="reboot -f"),
        # Without -no-reboot, a guest reboot resets the machine and boots again.
        boot("reset", our_vmm, smp=2, lock="on", command=REBOOT_TWICE, no_reboot=False,
             limit=300),
        page_sizes("thp_on", our_vmm, thp="on"),
        page_sizes("thp_off", our_vmm, thp="off"),
    ]
    return frags, {}


@pytest.mark.parametrize("name,smp", [("smp1_on", 1), ("smp2_on", 2), ("smp4_on", 4),
                                      ("smp1_off", 1), ("smp2_off", 2), ("pvh_smp2", 2)])
def test_linux_boots_and_sees_machine(runs, name, smp):
    guest = expect_guest(runs[name], "boot", exit_status=5, vmm_status=(5 << 1) | 1,
                         contains=[f"^cpus={smp}$", "^hello-from-linux$"])
    total_kib = int(re.search(r"^MemTotal:\s+(\d+) kB$", guest.log, re.M).group(1))
    # -m 512M minus what the kernel keeps for itself.
    assert 400 * 1024 < total_kib <= 512 * 1024, guest.log


def test_guest_ram_mapped_with_large_pages(runs):
    """Guest RAM sits on 2 MiB host pages at 2 MiB-aligned addresses, so
    KVM maps it with 2 MiB leaves; x-ram-thp=off leaves it 4 KiB pages
    (softmmu/guest-ram.c). Needs the host's THP in mode always or madvise
    (Debian's kernel: always)."""
    on, off = runs["thp_on"], runs["thp_off"]
    if "[never]" in line_value(on.output, "THP_MODE") or not line_value(on.output, "THP_MODE"):
        pytest.skip("the KVM host has no transparent huge pages")
    if "PAGES=unavailable" in on.output:
        pytest.skip("the KVM host shows no per-VM page counts in debugfs")
    assert int(line_value(on.output, "PAGES_2M")) > 0, on.output
    assert int(line_value(off.output, "PAGES_2M")) == 0, off.output
    assert int(line_value(off.output, "PAGES_4K")) > 0, off.output


@pytest.mark.parametrize("name,lock", [("smp2_on", "on"), ("smp2_off", "off")])
def test_lock_statistics_show_the_lock_taken(runs, name, lock):
    guest = runs[name].guest("boot")
    stats = dict(re.findall(r"^\s+(\S+)\s+\S+\s+(\d+)\s+\d+\s+[\d.]+$", guest.log, re.M))
    assert "global" in stats and "serial0" in stats, guest.log
    if lock == "on":
        assert int(stats["serial0"]) > 0 and int(stats["global"]) == 0, guest.log
    else:
        assert int(stats["serial0"]) == 0 and int(stats["global"]) > 0, guest.log


def test_long_kernel_command_line_arrives_intact(runs):
    guest = expect_guest(runs["long_cmdline"], "boot", exit_status=0)
    assert LONG_WORD in guest.log.split("KIT-READY", 1)[1], guest.log


def test_guest_reboot_with_no_reboot_exits_zero(runs):
    outcome = runs["reboot"]
    guest = outcome.guest("boot")
    assert "KIT-READY" in guest.log and not guest.killed, guest.log
    assert guest.rc == 0, guest.log


def test_guest_reboot_resets_and_boots_again(runs):
    guest = expect_guest(runs["reset"], "boot", exit_status=0, vmm_status=1,
                         contains=["^first-boot$", "^second-boot$"])
    assert guest.log.count("KIT-READY") == 2, guest.log


def test_cpu_model_options_reach_the_guest(runs):
    expect_guest(runs["cpu_model"], "boot", exit_status=0,
                 contains=[r"^vendor_id\s*: PdlTestCPU42$", "^popcnt$"])
