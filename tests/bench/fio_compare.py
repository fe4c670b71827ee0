#!/usr/bin/env python3
"""fio in the L2 guest on the nested bench: our VMM with device-lock=on and
off against Debian's qemu-system-x86_64 with the same -drive and -device
options, alternating within each round, medians over the rounds.

  tests/bench/fio_compare.py [--rounds 3] [--runtime 10] [--devices ide,virtio]
                             [--vmms ours-on,ours-off,qemu] [--jobs NAME,...]
                             [--l1-smp 1]

(--jobs keeps only the fio jobs named, for a reduced matrix on a busy machine.)

The disk is a brd RAM disk in L1 (a host block device: O_DIRECT for
cache=none, which L1's tmpfs lacks), zeroed before every guest.

  - IDE (-drive if=ide,cache=none,aio=native), a 1-vCPU guest:
    random 4k read and write at iodepth 1, sequential 1M read and write.
  - virtio-blk (-device virtio-blk-pci,num-queues=2 on the same drive
    options), a 2-vCPU guest: random 4k read at iodepth 32 with 2 jobs
    (libaio), sequential 1M read and write.

L2 guests under disk load hang the bench's L1 now and then (docs/
testing.md, "Still open"; issue 8: seen here with 1- and 2-vCPU guests).
Each round is a batch of its own, in a fresh L1, so a lost L1 costs the
rest of that round only: the bench harness reruns its unfinished fragments
in a fresh L1 (twice for a lost L1), and the next round starts anew. The
table marks every configuration with a rerun result, and counts the
results behind each median (n); a configuration without results says so. Our VMM runs with
lock-stats=on, and the lock statistics of its first round are printed.
Not pass/fail; results go to docs/benchmarks.md by hand.
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402

REFERENCE = "/usr/bin/qemu-system-x86_64"
DISK_MB = 128
FIO_SIZE = "96M"

VMMS = {
    # name: (VMM shell word, machine options)
    "ours-on": ('"$OURS"', "-machine pc,device-lock=on,lock-stats=on"),
    "ours-off": ('"$OURS"', "-machine pc,device-lock=off,lock-stats=on"),
    "qemu": ('"$BENCH_FILES/qemu"', "-machine pc"),
}

DRIVE = "file=/dev/ram0,format=raw,cache=none,aio=native"
DEVICES = {
    # name: (guest disk, vCPUs, VMM arguments, jobs as (name, fio arguments))
    "ide": ("sda", 1, [f'-drive "{DRIVE},if=ide"'], [
        ("randread-4k-qd1", "--rw=randread --bs=4k --ioengine=psync --iodepth=1"),
        ("randwrite-4k-qd1", "--rw=randwrite --bs=4k --ioengine=psync --iodepth=1"),
        ("read-1M", "--rw=read --bs=1M --ioengine=psync --iodepth=1"),
        ("write-1M", "--rw=write --bs=1M --ioengine=psync --iodepth=1"),
    ]),
    "virtio": ("vda", 2, [f'-drive "{DRIVE},if=none,id=d0"',
                          "-device virtio-blk-pci,drive=d0,num-queues=2"], [
        ("randread-4k-qd32x2", "--rw=randread --bs=4k --ioengine=libaio --iodepth=32 "
                               "--numjobs=2 --group_reporting"),
        ("read-1M", "--rw=read --bs=1M --ioengine=psync --iodepth=1"),
        ("write-1M", "--rw=write --bs=1M --ioengine=psync --iodepth=1"),
    ]),
}

RAMDISK = (f'grep -q " ram0$" /proc/partitions || '
           f'insmod "$(find /lib/modules -name brd.ko)" rd_nr=1 rd_size={DISK_MB * 1024}\n'
           f'dd if=/dev/zero of=/dev/ram0 bs=1M count={DISK_MB} 2>/dev/null\n')

# "  read: IOPS=359, BW=1437KiB/s (1472kB/s)(14.0MiB/10001msec)"
FIO_LINE = re.compile(r"^\s*(read|write): IOPS=([\d.]+)(k?), BW=([\d.]+)([KMG]i)B/s", re.M)
JOB_MARK = re.compile(r"^fio-job=(\S+)$", re.M)
UNIT = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}


def guest_command(dev, jobs, runtime):
    wait = f"i=0; while [ ! -b /dev/{dev} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; "
    runs = [f"echo fio-job={name}; fio --name={name} --filename=/dev/{dev} --direct=1 "
            f"--size={FIO_SIZE} --runtime={runtime} --time_based --ramp_time=2 {args} "
            "| grep -E '(read|write): IOPS='" for name, args in jobs]
    return wait + "; ".join(runs)


def fragment(round_, device, vmm_name, runtime, ours, jobs):
    dev, smp, drive_args, _ = DEVICES[device]
    word, machine = VMMS[vmm_name]
    args = kvmhost.l2_args(guest_command(dev, jobs, runtime), smp=smp,
                           initrd="initrd-fio.cpio", extra=[machine, *drive_args])
    limit = 180 + len(jobs) * (runtime + 30)
    script = f"OURS=$VMM\n{RAMDISK}VMM={word}; guest_run fio {limit} {args}\n"
    return kvmhost.Fragment(f"fio{round_}_{device}_{vmm_name}", script, ours, limit=limit + 60)


def parse(log):
    """{job: (IOPS, MB/s)} of one guest's console."""
    results = {}
    marks = list(JOB_MARK.finditer(log))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(log)
        found = FIO_LINE.search(log, mark.end(), end)
        if found:
            iops = float(found.group(2)) * (1000 if found.group(3) else 1)
            results[mark.group(1)] = (iops, float(found.group(4)) * UNIT[found.group(5)])
    return results


def lock_stats(log):
    """The lock statistics our VMM prints at exit (lock-stats=on): the
    heading and its indented lines."""
    found = re.search(r"^lock statistics \(device-lock=\w+\):\n(?:  .*\n?)+", log, re.M)
    return found.group(0).rstrip() if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10, help="seconds per fio job")
    ap.add_argument("--devices", default="ide,virtio")
    ap.add_argument("--vmms", default=",".join(VMMS))
    ap.add_argument("--jobs", help="only these fio jobs (default: all)")
    ap.add_argument("--l1-smp", default="1", help="vCPUs of the L1 host (BENCH_L1_SMP)")
    args = ap.parse_args()
    devices, vmms = args.devices.split(","), args.vmms.split(",")
    # One L1 at a time, all rounds in it, so that configurations alternate
    # and never share the machine with each other.
    os.environ.setdefault("VMM_TEST_L1_PARALLEL", "1")
    os.environ["BENCH_L1_SMP"] = args.l1_smp
    subprocess.run(["make", "-s", "-C", str(REPO)], check=True, stdout=subprocess.DEVNULL)
    vmm = str(REPO / "build/qemu-system-x86_64")
    frags = []
    for round_ in range(args.rounds):
        for device in devices:
            for name in vmms:
                jobs = [job for job in DEVICES[device][3]
                        if not args.jobs or job[0] in args.jobs.split(",")]
                if jobs:
                    frags.append(fragment(round_, device, name, args.runtime, vmm, jobs))
    started = datetime.datetime.now()
    outcomes = {}
    for round_ in range(args.rounds):
        batch = [frag for frag in frags if frag.name.startswith(f"fio{round_}_")]
        outcomes.update(kvmhost.run_batch(batch, mode="nested", files={"qemu": REFERENCE}))
    minutes = (datetime.datetime.now() - started).total_seconds() / 60

    results, retried, stats = {}, {}, {}
    for frag in frags:
        outcome = outcomes.get(frag.name)
        _, device, name = frag.name.split("_", 2)
        guest = outcome.guests.get("fio") if outcome else None
        if outcome and outcome.retried:
            retried.setdefault((device, name), []).append(outcome.retried)
        if not guest:
            continue
        for job, value in parse(guest.log).items():
            results.setdefault((device, name, job), []).append(value)
        if name != "qemu" and (device, name) not in stats:
            stats[(device, name)] = lock_stats(guest.log)

    print(f"fio on the nested bench, {started:%Y-%m-%d %H:%M}, {args.rounds} rounds, "
          f"{args.runtime} s per job, L1 with {args.l1_smp} vCPU(s), {minutes:.0f} min")
    header = " | ".join(vmms)
    print(f"| device | job | {header} | ours-on / qemu |")
    print("|---|---|" + "---|" * (len(vmms) + 1))
    for device in devices:
        for job, _ in DEVICES[device][3]:
            if args.jobs and job not in args.jobs.split(","):
                continue
            cells, medians = [], {}
            for name in vmms:
                values = results.get((device, name, job), [])
                if not values:
                    cells.append("no result")
                    continue
                big = job.endswith("1M")
                med = statistics.median(v[1] if big else v[0] for v in values)
                medians[name] = med
                mark = "*" if (device, name) in retried else ""
                unit = "MB/s" if big else "IOPS"
                cells.append(f"{med:.0f} {unit} (n={len(values)}){mark}")
            ratio = (f"{medians['ours-on'] / medians['qemu']:.2f}"
                     if medians.get("ours-on") and medians.get("qemu") else "-")
            print(f"| {device} | {job} | " + " | ".join(cells) + f" | {ratio} |")
    for (device, name), reasons in retried.items():
        print(f"* {device} {name}: {len(reasons)} result(s) after a rerun: " + reasons[0])
    for (device, name), block in stats.items():
        print(f"\nlock statistics, {device}, {name}, first round:\n{block}")


if __name__ == "__main__":
    main()
