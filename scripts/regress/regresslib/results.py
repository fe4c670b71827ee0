"""From the bench's outcomes to the regression document: every figure of
every run, per round, its median, the ratios between lock modes and
against the reference QEMU, the failures, and our lock statistics.

The document is plain JSON (the --json file) and everything after the run
(the table, the chart, the baseline comparison) reads only it, so that a
saved file can be shown or compared again (--report).
"""

import re
import statistics

# Ratio columns: name -> (numerator VMM, denominator VMM).
RATIOS = {"on/off": ("ours-on", "ours-off"), "on/qemu": ("ours-on", "qemu"),
          "off/qemu": ("ours-off", "qemu"), "on/nobatch": ("ours-on", "ours-nobatch"),
          "on/nothp": ("ours-on", "ours-nothp")}

LOCK_LINE = re.compile(r"^  (\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)$", re.M)
LOCK_BLOCK = re.compile(r"^lock statistics \(device-lock=\w+\):\n(?:  .*\n?)+", re.M)


def lock_stats(log):
    """Our VMM's lock statistics (lock-stats=on, printed at exit) as rows,
    locks never taken left out; [] when the log has none."""
    block = LOCK_BLOCK.search(log)
    if not block:
        return []
    return [{"lock": m[1], "type": m[2], "acquired": int(m[3]), "contended": int(m[4]),
             "wait_ms": float(m[5])}
            for m in LOCK_LINE.finditer(block.group(0)) if int(m[3])]


def failure_reason(outcome, guest_name):
    """Why a run gave no figures: the bench's own words where it has them."""
    if outcome is None or outcome.rc is None:
        return "no result: the bench host hung or died, also on its reruns"
    guest = outcome.guests.get(guest_name)
    if guest is None:
        return f"no guest console (fragment status {outcome.rc})"
    if guest.killed:
        return "hung: the guest was killed at its time limit"
    if guest.panicked():
        return "the guest kernel panicked"
    if "triple fault" in guest.log:
        return f"a triple fault reset the guest (VMM status {guest.rc})"
    return f"the guest printed no figures (VMM status {guest.rc})"


def collect(workload, runs, outcomes):
    """(samples, failures, reruns, stats): samples {(device, vcpus, test,
    metric, vmm): [value or None per round]}; failures (runs without their
    figures) and reruns (runs whose figures came from the harness's rerun)
    as dicts; lock statistics {run name: rows}."""
    rounds = 1 + max((run.round for run in runs), default=0)
    samples, failures, reruns, stats = {}, [], [], {}
    for run in runs:
        outcome = outcomes.get(run)
        guest = outcome.guests.get(workload.guest) if outcome else None
        figures = workload.parse(run, guest.log) if guest else {}
        expected = workload.expected(run)
        for test, metric in expected:
            key = (run.device, run.vcpus, test, metric, run.vmm)
            samples.setdefault(key, [None] * rounds)[run.round] = figures.get((test, metric))
        lacking = [f"{t} {m}" for t, m in expected if (t, m) not in figures]
        if lacking:
            reason = failure_reason(outcome, workload.guest)
            if len(lacking) < len(expected):
                reason = "no figure for " + ", ".join(lacking) + f" ({reason})"
            failures.append({"run": run.name, "round": run.round, "device": run.device,
                             "vcpus": run.vcpus, "vmm": run.vmm, "reason": reason})
        if guest and run.vmm.startswith("ours"):
            stats[run.name] = lock_stats(guest.log)
        if outcome and outcome.retried:
            reruns.append({"run": run.name, "reason": outcome.retried})
    return samples, failures, reruns, stats


def median(values):
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def document(tool, metrics, collected, meta):
    """The JSON document of one regression run; collected is collect()'s."""
    samples, failures, reruns, stats = collected
    cells = [{"device": d, "vcpus": n, "test": t, "metric": m, "vmm": v,
              "rounds": values, "median": median(values)}
             for (d, n, t, m, v), values in samples.items()]
    medians = {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c["median"]
               for c in cells}
    ratios = []
    for row in dict.fromkeys((d, n, t, m) for d, n, t, m, _ in samples):
        entry = dict(zip(("device", "vcpus", "test", "metric"), row))
        for name, (top, bottom) in RATIOS.items():
            a, b = medians.get((*row, top)), medians.get((*row, bottom))
            if (*row, top) in medians and (*row, bottom) in medians:
                entry[name] = a / b if a is not None and b else None
        ratios.append(entry)
    return {"tool": tool, "format": 1, **meta, "metrics": metrics, "cells": cells,
            "ratios": ratios, "failures": failures, "reruns": reruns, "lock_stats": stats}
