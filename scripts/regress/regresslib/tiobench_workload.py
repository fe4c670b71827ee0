"""tiobench's workload, job for job, with fio (tiobench itself is not in
Debian 12): for 1, 2 and 4 threads, sequential write, random write,
sequential read, random read (tiotest's order), 4 KiB blocks, each thread
on its own region of the disk (tiotest gives each thread a file of its
own), reporting tiobench's columns.

Not the guest's page cache: fio opens the raw disk with O_DIRECT (every
4 KiB request reaches the emulated controller), the disk is 4 times the
guest's RAM (even buffered I/O could not be served from its cache), and the
VMM opens its image with cache=none. On the nested bench the image is a
RAM disk (brd) in L1: the figures measure the VMM's path, not a disk; on
a host with hardware KVM it is a sparse file (DISK_SETUP).

tiobench's columns, from fio's json+ output (summed over the threads):
  MB/s         bandwidth, MiB/s
  avg ms       mean latency of a request (fio's lat: submission to completion)
  max ms       the longest request
  >2s %        share of requests over 2 s, from fio's full completion-latency
  >10s %       histogram (json+ "bins"); tiobench's Lat% columns
  CPU eff      MB/s / (CPU% / 100), CPU% the guest's user + system time
The json+ histogram has hundreds of lines: a short awk program in the
guest reduces fio's output to the lines these need before the console
carries them (the console of a nested L2 is slow).
"""

from . import matrix  # noqa: F401  (first: it puts the bench harness, kvmhost, on sys.path)
import kvmhost  # noqa: E402
from .report import vmms_of, wide_table

DRIVE = "file=$DISK,format=raw,cache=none,aio=native"
# name: (guest disk, VMM arguments)
DEVICES = {
    "ide": ("sda", [f'-drive "{DRIVE},if=ide"']),
    "virtio-blk": ("vda", [f'-drive "{DRIVE},if=none,id=d0"',
                           "-device virtio-blk-pci,drive=d0"]),
}
JOBS = ("write", "randwrite", "read", "randread")      # fio's rw= names
GUEST_MB = 512
DISK_MB = 4 * GUEST_MB

# The guest's disk, $DISK. In the nested bench's L1 (/bench is its payload)
# a brd RAM disk, made once per L1 and kept between runs (the write jobs
# come first in every run): L1's tmpfs has no O_DIRECT for cache=none.
# On a host with hardware KVM, a sparse file in the run's $WORK, whose file
# system must then allow O_DIRECT (not tmpfs: set TMPDIR).
DISK_SETUP = (f'if [ -d /bench ]; then DISK=/dev/ram0; grep -q " ram0$" /proc/partitions || '
              f'insmod "$(find /lib/modules -name brd.ko)" rd_nr=1 rd_size={DISK_MB * 1024}; '
              f'else DISK="$WORK/disk.raw"; truncate -s {DISK_MB}M "$DISK"; fi\n')

# Reduce fio's json+ to the lines parse() reads: every opening and closing
# line (for the structure), the leaves it needs, and each "bins" histogram
# summed into n (requests), o2 (over 2 s) and o10 (over 10 s).
REDUCE = (r"""awk -F'"' '{sub(/^ +/,"")} /^"bins"/{b=1;n=s=t=0;next} """
          r"""b&&/^}/{b=0;print "\"n\" : "n",";print "\"o2\" : "s",";print "\"o10\" : "t;"""
          r"""next} b{c=$3;gsub(/[^0-9]/,"",c);n+=c;if($2+0>2e9)s+=c;if($2+0>1e10)t+=c;next} """
          r"""/[{[],?$/||/^[]}]/||/^"(bw|mean|max|usr_cpu|sys_cpu)"/'""")

METRICS = {
    "MB/s": {"better": "higher"},
    "avg ms": {"better": "lower"},
    "max ms": {"better": "lower"},
    ">2s %": {"better": None},
    ">10s %": {"better": None},
    "CPU eff": {"better": "higher"},
}


def guest_command(dev, threads, jobs, runtime):
    """One shell line (it goes on the kernel command line, base64: keep it
    short) that runs every job at every thread count."""
    # The whole disk shared out among the threads, a region each ($r MiB).
    return (kvmhost.wait_for_disks(f"/dev/{dev}") +
            f"for t in {' '.join(map(str, threads))}; do r=$(({DISK_MB}/t)); "
            f"for j in {' '.join(jobs)}; do "
            f"echo fio-job=$j-$t; fio --name=$j --filename=/dev/{dev} --direct=1 --rw=$j "
            f"--bs=4k --ioengine=psync --numjobs=$t --size=${{r}}M "
            f"--offset_increment=${{r}}M --group_reporting --runtime={runtime} --time_based "
            f"--output-format=json+ | {REDUCE}; done; done")


def reduced_json(lines):
    """{path: value} of the reduced fio output: path is the tuple of block
    names down to the leaf ('' for a block without a name)."""
    leaves, path = {}, []
    for line in lines:
        line = line.strip()
        if line.endswith(("{", "[", "{,", "[,")):
            path.append(line.split('"')[1] if line.startswith('"') else "")
        elif line.startswith(("}", "]")):
            if path:
                path.pop()
        elif line.startswith('"') and " : " in line:
            key, value = line.split(" : ", 1)
            try:
                leaves[(*path, key.strip('"'))] = float(value.rstrip(","))
            except ValueError:
                pass
    return leaves


def job_figures(lines, direction):
    """tiobench's columns of one fio run from its reduced output, or {}."""
    leaves = reduced_json(lines)
    job = ("", "jobs", "", direction)
    kib_s, requests = leaves.get((*job, "bw")), leaves.get((*job, "clat_ns", "n"))
    if not kib_s or not requests:
        return {}
    mb_s = kib_s / 1024
    cpu = leaves.get(("", "jobs", "", "usr_cpu"), 0) + leaves.get(("", "jobs", "", "sys_cpu"), 0)
    return {
        "MB/s": mb_s,
        "avg ms": leaves[(*job, "lat_ns", "mean")] / 1e6,
        "max ms": leaves[(*job, "lat_ns", "max")] / 1e6,
        ">2s %": 100 * leaves[(*job, "clat_ns", "o2")] / requests,
        ">10s %": 100 * leaves[(*job, "clat_ns", "o10")] / requests,
        "CPU eff": mb_s / (cpu / 100) if cpu else None,
    }


def parse_log(log):
    """{(test, metric): value} of a console with fio-job=JOB-THREADS marks."""
    figures, job, lines = {}, None, []
    for line in log.splitlines() + ["fio-job=end-0"]:
        if line.startswith("fio-job="):
            if job:
                direction = "write" if "write" in job.rsplit("-", 1)[0] else "read"
                for metric, value in job_figures(lines, direction).items():
                    if value is not None:
                        figures[(job, metric)] = value
            job, lines = line.split("=", 1)[1].strip(), []
        elif job:
            lines.append(line)
    return figures


class Tiobench:
    tool = "tiobench"
    guest = "disk"
    devices = DEVICES
    default_devices = ["ide", "virtio-blk"]
    default_vcpus = [1, 2, 4]
    metrics = METRICS
    headline = ["MB/s", "avg ms"]
    files = {}

    def add_arguments(self, ap):
        ap.add_argument("--runtime", type=int, default=10, help="seconds per fio job (10)")
        ap.add_argument("--threads", default="1,2,4", help="thread counts (1,2,4)")
        ap.add_argument("--jobs", default=",".join(JOBS), help="fio jobs, tiotest's order")

    def configure(self, args):
        if args.quick:
            args.runtime, args.threads = min(args.runtime, 3), "1"
        self.runtime = args.runtime
        self.threads = [int(t) for t in args.threads.split(",")]
        self.jobs = args.jobs.split(",")
        unknown = [j for j in self.jobs if j not in JOBS]
        if unknown:
            raise ValueError(f"--jobs: unknown {', '.join(unknown)} (known: {', '.join(JOBS)})")
        return {"runtime": self.runtime, "threads": self.threads, "jobs": self.jobs,
                "guest_mb": GUEST_MB, "disk_mb": DISK_MB, "block": "4k"}

    def summary(self, doc):
        return {}

    def supports(self, device, vmm):
        return True

    def tests(self):
        return [f"{j}-{t}" for t in self.threads for j in self.jobs]

    def expected(self, run):
        return [(test, m) for test in self.tests() for m in METRICS]

    def fragment(self, run):
        dev, drive = DEVICES[run.device]
        args = kvmhost.l2_args(guest_command(dev, self.threads, self.jobs, self.runtime),
                               smp=run.vcpus, mem=f"{GUEST_MB}M", initrd="initrd-fio.cpio",
                               extra=[run.machine, *drive])
        limit = 240 + len(self.tests()) * (self.runtime + 20)
        script = f"{DISK_SETUP}guest_run {self.guest} {limit} {args}\n"
        return kvmhost.Fragment(run.name, script, run.binary, limit=limit + 60)

    def parse(self, run, log):
        return parse_log(log)

    def report(self, doc):
        return "\n\n".join(f"tiobench's table, {vmm} (medians):\n"
                           + wide_table(doc, vmm, list(METRICS)) for vmm in vmms_of(doc))
