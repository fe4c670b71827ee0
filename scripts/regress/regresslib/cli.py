"""The command line shared by scripts/regress/iperf and scripts/regress/
tiobench: the matrix options, the run, and what comes out of it (table,
JSON, chart, baseline comparison). Exit status: 0, 1 for a bad option, 3
when --baseline finds a cell that fell by more than --threshold."""

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

from . import chart, matrix, report, results
from .neighbours_workload import Neighbours

FELL = 3


def parser(workload):
    ap = argparse.ArgumentParser(prog=f"scripts/regress/{workload.tool}",
                                 description=sys.modules[type(workload).__module__].__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the whole matrix (3)")
    ap.add_argument("--vcpus", help="guest vCPU counts (1,2,4; those above the host's "
                                    "cores are left out)")
    ap.add_argument("--devices", help="devices, of: " + ", ".join(workload.devices))
    ap.add_argument("--vmms", help="configurations, of: " + ", ".join(matrix.VMMS)
                    + " (" + ", ".join(matrix.DEFAULT_VMMS) + "; --quick: ours-on)")
    ap.add_argument("--no-reference", action="store_true", help="leave Debian's QEMU out")
    ap.add_argument("--quick", action="store_true",
                    help="one short run per device: 1 round, 1 vCPU (2 with --neighbours), "
                         "ours with device-lock=on only")
    ap.add_argument("--neighbours", action="store_true",
                    help="the busy-neighbours matrix instead (virtio-net and IDE at once; "
                         "its devices: net, disk, both)")
    ap.add_argument("--l1-vcpus", type=int,
                    help="vCPUs of the nested bench's L1 host (default: the guest's, up to "
                         "the host's cores, so that the guest's vCPUs can run at once; 1 "
                         "avoids the outer emulator's crash with two, docs/testing.md)")
    ap.add_argument("--json", help="where the results go (build/regress/TOOL-DATE.json)")
    ap.add_argument("--chart", help="the PNG chart (beside the JSON)")
    ap.add_argument("--baseline", help="a saved JSON to compare with")
    ap.add_argument("--threshold", type=float, default=10.0,
                    help="percent a median may fall before --baseline fails (10)")
    ap.add_argument("--report", metavar="JSON[,JSON...]",
                    help="show (and compare) a saved JSON instead of running; several, "
                         "comma-separated: their rounds pooled into one document")
    workload.add_arguments(ap)
    return ap


def names(option, text, known):
    """The comma-separated names of an option, each checked."""
    chosen = text.split(",")
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise ValueError(f"{option}: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    return chosen


def configure(workload, args):
    """The matrix the options ask for: (devices, vcpus, vmms, options)."""
    if args.rounds < 1:
        raise ValueError("--rounds: at least 1")
    if args.l1_vcpus is not None and args.l1_vcpus < 1:
        raise ValueError("--l1-vcpus: at least 1")
    if args.threshold < 0:
        raise ValueError("--threshold: a percentage, 0 or more")
    devices = names("--devices", args.devices, workload.devices) if args.devices else \
        workload.default_devices
    vmms = list(matrix.DEFAULT_VMMS)
    vcpus = workload.default_vcpus
    if args.quick:
        args.rounds, vcpus, vmms = 1, vcpus[:1], ["ours-on"]
    if args.vmms:
        vmms = names("--vmms", args.vmms, matrix.VMMS)
    if args.vcpus:
        try:
            vcpus = [int(n) for n in args.vcpus.split(",")]
        except ValueError:
            raise ValueError(f"--vcpus: numbers, e.g. 1,2,4 (not {args.vcpus})") from None
    if args.no_reference:
        vmms = [v for v in vmms if v != "qemu"]
    options = workload.configure(args)
    return devices, vcpus, vmms, options


def check_vmms(vmms):
    """Build ours; insist on the reference where it is asked for."""
    if any(v.startswith("ours") for v in vmms):
        subprocess.run(["make", "-s", "-C", str(matrix.REPO)], check=True,
                       stdout=subprocess.DEVNULL)
    if "qemu" in vmms and not Path(matrix.REFERENCE).exists():
        raise ValueError(f"{matrix.REFERENCE} is missing (apt-get install qemu-system-x86), "
                         "or run with --no-reference")


def load(option, path):
    """A saved regression document, or a ValueError naming the option."""
    try:
        doc = json.loads(Path(path).read_text())
        if not isinstance(doc, dict) or "cells" not in doc:
            raise ValueError("not a regression document")
        return doc
    except (OSError, ValueError) as err:
        raise ValueError(f"{option} {path}: {err}") from None


def show(workload, doc, args, json_path, baseline):
    """Print the tables, draw the chart, compare with the baseline (a
    document or None); returns the exit status."""
    print(f"{doc['tool']} on the {doc['host_mode']} bench, {doc['started']}, "
          f"{doc['rounds']} round(s), {doc['minutes']:.0f} min; {doc['options']}")
    for part in doc.get("pooled", []):
        print(f"  pooled: {part['started']}, {part['rounds']} round(s); {part['options']}")
    print("Per VMM: each round's figure, [median]; ratios of medians "
          "(on/off: per-device lock over the global lock), (90% bootstrap interval) "
          f"where both sides have {results.INTERVAL_MIN_FIGURES}+ figures.\n")
    print(report.table(doc, workload.headline))
    extra = workload.report(doc)
    if extra:
        print("\n" + extra)
    for line in report.failures(doc):
        print(line)
    png = Path(args.chart or Path(json_path).with_suffix(".png"))
    why = chart.draw(doc, workload.headline, png)
    print(f"\nJSON: {json_path}\n" + (why or f"chart: {png}"))
    if baseline is None:
        return 0
    fell, missing = report.compare(baseline, doc, args.threshold)
    for line in missing:
        print(f"no result now: {line}")
    for line in fell:
        print(f"FELL {line}")
    print(f"baseline {args.baseline}: {len(fell)} cell(s) fell by more than "
          f"{args.threshold:g}%")
    return FELL if fell else 0


def report_saved(workload, args, baseline):
    """--report: one saved document, or several pooled (the JSON and chart
    of a pool go beside its first document, named .pooled); medians,
    ratios and intervals computed anew from the rounds either way (pool
    does it for several), so that a document saved by an older script
    shows every figure of today's."""
    paths = args.report.split(",")
    docs = [load("--report", path) for path in paths]
    if len(docs) == 1:
        return show(workload, results.refresh(docs[0]), args, paths[0], baseline)
    doc = results.pool(docs)
    doc.update(workload.summary(doc))
    json_path = Path(args.json or Path(paths[0]).with_suffix(".pooled.json"))
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    return show(workload, doc, args, json_path, baseline)


def main(workload):
    args = parser(workload).parse_args()
    if args.neighbours:
        workload = Neighbours()
    try:
        baseline = load("--baseline", args.baseline) if args.baseline else None
        if args.report:
            return report_saved(workload, args, baseline)
        devices, vcpus, vmms, options = configure(workload, args)
        vcpus, too_many = matrix.usable_vcpus(vcpus)
        if too_many:
            print(f"left out: {too_many} vCPUs (this host has fewer cores)", file=sys.stderr)
        if not vcpus:
            raise ValueError("--vcpus: no count this host can give a guest")
        check_vmms(vmms)
    except (ValueError, OSError) as err:
        print(f"scripts/regress/{workload.tool}: {err}", file=sys.stderr)
        return 1
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = f"{workload.tool}-{started:%Y%m%d-%H%M%S}"
    json_path = Path(args.json or matrix.REPO / "build/regress" / f"{stamp}.json")
    logdir = matrix.REPO / "build/regress" / stamp
    logdir.mkdir(parents=True, exist_ok=True)
    runs = [run for run in matrix.plan(args.rounds, devices, vcpus, vmms)
            if workload.supports(run.device, run.vmm)]
    outcomes = matrix.execute(workload, runs, logdir, args.l1_vcpus)
    minutes = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60
    meta = {"started": f"{started:%Y-%m-%d %H:%M} UTC", "minutes": minutes,
            "host_mode": matrix.kvmhost.host_mode(), "rounds": args.rounds,
            "l1_vcpus": args.l1_vcpus or "the guest's",
            "devices": devices, "vcpus": vcpus, "vmms": vmms, "options": options,
            "logs": str(logdir)}
    doc = results.document(workload.tool, workload.metrics,
                           results.collect(workload, runs, outcomes), meta)
    doc.update(workload.summary(doc))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    return show(workload, doc, args, json_path, baseline)
