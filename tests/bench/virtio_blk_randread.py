#!/usr/bin/env python3
"""virtio-blk random 4 KiB reads at queue depth 32: our VMM against Debian's
qemu-system-x86_64, side by side in one L1, with what each request costs.

  tests/bench/virtio_blk_randread.py [--rounds 3] [--runtime 10] [--l1-smp 1]
                                     [--vmms ours-on,ours-nobatch,qemu] [--strace]
                                     [--build before=BINARY --vmms before,ours-on,qemu]

Issue 10's job (docs/benchmarks.md): a 2-vCPU guest, virtio-blk-pci with
num-queues=2 on a brd RAM disk in L1 (cache=none,aio=native on both
sides), fio --rw=randread --bs=4k --ioengine=libaio --iodepth=32
--numjobs=2. Rounds alternate the VMMs. Besides fio's IOPS, every run
reads L1's KVM counters (debugfs) and CPU times before and after fio, and
prints them per request (fio's IOPS times the window): L2 exits, I/O and
MMIO exits to user space, injected interrupts, halts; CPU time of the
VMM's threads (user, of it the guest's, system), of its main thread alone
(the main loop: kicks and completions), and L1's idle time. --strace adds
one run per VMM with `strace -c -f` attached to the VMM for a few seconds
of fio: its system calls per request. Not pass/fail.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402
from ramdisk_bench import BRD_SETUP, REFERENCE, vmm_configs  # noqa: E402

VMMS = vmm_configs(",lock-stats=on")
# --build NAME=BINARY: another build of ours (before/after in one run),
# as the VMM NAME with device-lock=on.
OURS_MACHINE = "-machine pc,device-lock=on,lock-stats=on"
DEVICE = ['-drive "file=/dev/ram0,format=raw,cache=none,aio=native,if=none,id=d0"',
          "-device virtio-blk-pci,drive=d0,num-queues=2"]
# L1's KVM counters (every file of debugfs' kvm/, summed over its VMs: one
# runs at a time); these first in the table, the others where runs differ.
KVM_STATS = ("exits", "io_exits", "mmio_exits", "irq_injections", "halt_exits",
             "irq_exits", "halt_successful_poll", "halt_wakeup")
# Clock ticks: the VMM's (all threads) and L1's whole CPU.
CPU_STATS = ("vmm_user", "vmm_guest", "vmm_sys", "main_user", "main_sys", "l1_idle")

HOST_SETUP = (
    BRD_SETUP +
    'mount -t debugfs none /sys/kernel/debug 2>/dev/null\n'
    'snap() {  # RUN WHICH: the counters, one line\n'
    '    printf "@@STATS %s-%s" "$1" "$2"\n'
    '    _p=$(cat $WORK/$1.pid)\n'
    '    set -- $(cat /proc/$_p/stat); printf " vmm_user=%s vmm_sys=%s vmm_guest=%s" "${14}" "${15}" "${43}"\n'
    '    set -- $(cat /proc/$_p/task/$_p/stat); printf " main_user=%s main_sys=%s" "${14}" "${15}"\n'
    '    set -- $(head -1 /proc/stat); printf " l1_user=%s l1_sys=%s l1_idle=%s l1_softirq=%s" "$2" "$4" "$5" "$8"\n'
    '    for f in /sys/kernel/debug/kvm/*; do\n'
    '        [ -f "$f" ] && printf " %s=%s" "${f##*/}" "$(cat "$f")"; done\n'
    '    read -r _up _ < /proc/uptime; echo " up_cs=${_up%.*}${_up#*.}"\n'
    '}\n')


def guest_command(runtime):
    return (kvmhost.wait_for_disks("/dev/vda") +
            "echo FIO-GO; fio --name=rr --filename=/dev/vda --direct=1 --size=96M "
            f"--runtime={runtime} --time_based --rw=randread --bs=4k --ioengine=libaio "
            "--iodepth=32 --numjobs=2 --group_reporting | grep -E 'read: IOPS='; "
            "echo FIO-DONE; grep -E 'virtio|LOC|RES|CAL' /proc/interrupts; "
            "sleep 3")   # the VM's counters die with it


def run_lines(name, vmm, guest, runtime, strace):
    word, machine = VMMS[vmm]
    limit = 300 + runtime
    lines = [f"VMM={word}; guest_start {name} {limit} {machine} {guest}",
             f"guest_wait_for {name} FIO-GO {limit} && {{ sleep 1; snap {name} 0"]
    if strace:
        lines.append(f"strace -c -f -p $(cat $WORK/{name}.pid) -o $WORK/{name}.strace & sp=$!; "
                     f"sleep {max(2, runtime // 2)}; kill -INT $sp; wait $sp; snap {name} 1; }}")
    else:
        lines.append(f"guest_wait_for {name} FIO-DONE {limit}; snap {name} 1; }}")
    lines.append(f"guest_wait {name}")
    if strace:
        lines.append(f'echo "@@STRACE-BEGIN {name}"; cat $WORK/{name}.strace; '
                     f'echo "@@STRACE-END {name}"')
    return lines


STATS = re.compile(r"^@@STATS (\S+)-([01])((?: \w+=\d+)+)$", re.M)
IOPS = re.compile(r"^\s*read: IOPS=([\d.]+)(k?),", re.M)


def per_request(output, iops, runtime):
    """{run: {counter: per request}} from the @@STATS lines. The window
    starts a second into fio and ends once the console shows fio's end,
    which a busy L1 may see late: its requests are fio's IOPS times its
    length, at most fio's runtime less that second."""
    snaps = {}
    for name, which, fields in STATS.findall(output):
        snaps.setdefault(name, {})[which] = dict(
            (k, int(v)) for k, v in (f.split("=") for f in fields.split()))
    result = {}
    for name, s in snaps.items():
        if "0" in s and "1" in s and iops.get(name):
            seconds = min((s["1"]["up_cs"] - s["0"]["up_cs"]) / 100, runtime - 1)
            reqs = round(iops[name] * seconds)
            if reqs > 0:
                result[name] = {k: (s["1"][k] - s["0"][k]) / reqs for k in s["0"]}
                result[name]["reads"] = reqs
    return result


VIRTIO_IRQ = re.compile(r"^\s*\d+:((?:\s+\d+)+)\s+PCI-MSI\s+\S+\s+virtio\d+-req", re.M)
FIO_TOTAL = re.compile(r"\(([\d.]+)([KMG]i)B/(\d+)msec\)")


def print_virtio_interrupts(runs, outcome):
    """Requests per virtio-blk interrupt in each guest (its /proc/interrupts
    after fio, boot included: a few dozen)."""
    print("requests per virtio-blk interrupt (the guest's /proc/interrupts):")
    for name, _, _ in runs:
        guest = outcome.guests.get(name)
        total = FIO_TOTAL.search(guest.log) if guest else None
        irqs = sum(int(n) for line in VIRTIO_IRQ.findall(guest.log) for n in line.split()) \
            if guest else 0
        if total and irqs:
            mib = float(total.group(1)) * {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}[total.group(2)]
            requests = mib * 256        # 4 KiB each
            print(f"  {name:20s} {requests:8.0f} requests {irqs:7d} interrupts "
                  f"{requests / irqs:6.2f} per interrupt")


def print_costs(runs, costs):
    """The per-request table: a row per counter, a column per run."""
    print("per request during fio (fio's IOPS x the window), one column per run:")
    names = [name for name, _, _ in runs if name in costs]
    print(f"  {'':24s}" + "".join(f"{n[-14:]:>15s}" for n in names))
    counters = [k for k in costs[names[0]]
                if k not in ("up_cs", "reads", "l1_user", "l1_sys", "l1_softirq")] if names else []

    def differs(k):
        values = [costs[n].get(k, 0) for n in names]
        return max(values) > 0.05 and max(values) > 1.3 * min(values)

    rows = [k for k in KVM_STATS] + [k for k in counters
                                     if k not in KVM_STATS and k not in CPU_STATS and differs(k)]
    for k in rows:
        print(f"  {k:24s}" + "".join(f"{costs[n].get(k, 0):15.3f}" for n in names))
    for k in CPU_STATS:     # clock ticks of 10 ms, in microseconds
        print(f"  {k + ' (us)':24s}" + "".join(f"{costs[n].get(k, 0) * 1e4:15.1f}" for n in names))
    print(f"  {'requests':24s}" + "".join(f"{costs[n]['reads']:15d}" for n in names))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10, help="seconds of fio per run")
    ap.add_argument("--vmms", default="ours-on,qemu")
    ap.add_argument("--l1-smp", default="1", help="vCPUs of the L1 host (BENCH_L1_SMP)")
    ap.add_argument("--build", metavar="NAME=BINARY", action="append", default=[],
                    help="another build of ours, run as the VMM NAME (device-lock=on); "
                         "name it in --vmms")
    ap.add_argument("--from-log", metavar="FILE",
                    help="report a finished run again from its batch log (build/test-logs/"
                         "vblk_randread.*.data.log), given the same options")
    ap.add_argument("--strace", action="store_true",
                    help="one more run per VMM under strace -c (system calls per request)")
    args = ap.parse_args()
    files = {"qemu": REFERENCE}
    for build in args.build:
        name, binary = build.split("=", 1)
        VMMS[name] = (f'"$BENCH_FILES/{name}"', OURS_MACHINE)
        files[name] = binary
    os.environ.setdefault("VMM_TEST_L1_PARALLEL", "1")
    os.environ["BENCH_L1_SMP"] = args.l1_smp
    if not args.from_log:
        subprocess.run(["make", "-s", "-C", str(REPO)], check=True, stdout=subprocess.DEVNULL)
    ours = str(REPO / "build/qemu-system-x86_64")
    vmms = args.vmms.split(",")
    guest = kvmhost.l2_args(guest_command(args.runtime), smp=2, initrd="initrd-fio.cpio",
                            extra=DEVICE)
    lines = ["OURS=$VMM", HOST_SETUP]
    runs = []
    for r in range(args.rounds):
        for vmm in vmms:
            runs.append((f"r{r}_{vmm}".replace("-", "_"), vmm, False))
    if args.strace:
        runs += [(f"strace_{vmm}".replace("-", "_"), vmm, True) for vmm in vmms]
    for name, vmm, strace in runs:
        lines += run_lines(name, vmm, guest, args.runtime, strace)
    frag = kvmhost.Fragment("vblk_randread", "\n".join(lines), ours,
                            limit=len(runs) * (360 + args.runtime))
    if args.from_log:
        outcome = kvmhost.parse_batch(Path(args.from_log).read_text())["vblk_randread"]
    else:
        outcome = kvmhost.run_batch([frag], files=files)["vblk_randread"]
    iops, run_iops = {}, {}
    for name, vmm, strace in runs:
        guest_log = outcome.guests.get(name)
        found = IOPS.search(guest_log.log) if guest_log else None
        if found:
            run_iops[name] = float(found.group(1)) * (1000 if found.group(2) else 1)
            if not strace:
                iops.setdefault(vmm, []).append(run_iops[name])
    costs = per_request(outcome.output, run_iops, args.runtime)
    print(f"virtio-blk randread 4k QD32 x 2 jobs, 2 vCPUs, {args.runtime} s, "
          f"L1 smp {args.l1_smp} ({kvmhost.host_mode()})")
    for vmm in vmms:
        figures = iops.get(vmm, [])
        med = statistics.median(figures) if figures else float("nan")
        print(f"  {vmm:8s} IOPS median {med:8.0f}   rounds: {figures}")
    if all(iops.get(v) for v in vmms) and "qemu" in vmms:
        q = statistics.median(iops["qemu"])
        for vmm in vmms:
            if vmm != "qemu":
                ratios = [o / r for o, r in zip(iops[vmm], iops["qemu"])]
                print(f"  {vmm}/qemu: {statistics.median(iops[vmm]) / q:.2f} (medians); "
                      f"per round: {', '.join(f'{x:.2f}' for x in ratios)}")
    print_virtio_interrupts(runs, outcome)
    print_costs(runs, costs)
    for name, _, strace in runs:
        block = re.search(rf"^@@STRACE-BEGIN {name}\n(.*?)^@@STRACE-END", outcome.output,
                          re.M | re.S)
        if strace and block:
            reqs = costs.get(name, {}).get("reads")
            print(f"strace -c -f of {name} (about {reqs} requests in the window):")
            print(block.group(1).rstrip())
    for name, _, _ in runs:
        guest_log = outcome.guests.get(name)
        if guest_log:
            found = re.search(r"^lock statistics.*\n(?:  .*\n?)+", guest_log.log, re.M)
            if found:
                print(f"{name}: {found.group(0).rstrip()}")
                break
    if not costs:
        print(outcome.output[-4000:])


if __name__ == "__main__":
    main()
