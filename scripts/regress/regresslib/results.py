"""From the bench's outcomes to the regression document: every figure of
every run, per round, its median, the ratios between lock modes and
against the reference QEMU, the failures, and our lock statistics.

The document is plain JSON (the --json file) and everything after the run
(the table, the chart, the baseline comparison) reads only it, so that a
saved file can be shown or compared again (--report), or pooled with
other saved files of the same matrix into one document (pool).
"""

import random
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


# The bootstrap behind each ratio's interval: draws, the central share of
# them the interval holds, and the fewest figures a side needs (with two,
# a resampled median takes only three values and the interval says nothing).
BOOTSTRAP_DRAWS = 2000
CONFIDENCE = 0.90
INTERVAL_MIN_FIGURES = 3


def ratio_interval(top, bottom):
    """A percentile-bootstrap interval of median(top) / median(bottom): both
    sides resampled with replacement, each draw's ratio of medians, the
    central CONFIDENCE of them. Seeded, so that one document always shows
    the same interval. None when a side has too few figures or a draw's
    denominator median is 0."""
    a = [v for v in top if v is not None]
    b = [v for v in bottom if v is not None]
    if min(len(a), len(b)) < INTERVAL_MIN_FIGURES:
        return None
    rng = random.Random(0)
    draws = []
    for _ in range(BOOTSTRAP_DRAWS):
        low = statistics.median(rng.choices(b, k=len(b)))
        if not low:
            return None
        draws.append(statistics.median(rng.choices(a, k=len(a))) / low)
    draws.sort()
    tail = (1 - CONFIDENCE) / 2
    return [draws[int(tail * BOOTSTRAP_DRAWS)], draws[int((1 - tail) * BOOTSTRAP_DRAWS) - 1]]


def analyse(samples):
    """(cells, ratios) of samples {(device, vcpus, test, metric, vmm):
    [value or None per round]}: each cell's rounds and median, and per row
    the ratios of medians of RATIOS with their intervals."""
    cells = [{"device": d, "vcpus": n, "test": t, "metric": m, "vmm": v,
              "rounds": values, "median": median(values)}
             for (d, n, t, m, v), values in samples.items()]
    medians = {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c["median"]
               for c in cells}
    ratios = []
    for row in dict.fromkeys((d, n, t, m) for d, n, t, m, _ in samples):
        entry = dict(zip(("device", "vcpus", "test", "metric"), row))
        intervals = {}
        for name, (top, bottom) in RATIOS.items():
            if (*row, top) not in medians or (*row, bottom) not in medians:
                continue
            a, b = medians[(*row, top)], medians[(*row, bottom)]
            entry[name] = a / b if a is not None and b else None
            intervals[name] = ratio_interval(samples[(*row, top)], samples[(*row, bottom)])
        entry["intervals"] = intervals
        ratios.append(entry)
    return cells, ratios


def document(tool, metrics, collected, meta):
    """The JSON document of one regression run; collected is collect()'s."""
    samples, failures, reruns, stats = collected
    cells, ratios = analyse(samples)
    return {"tool": tool, "format": 1, **meta, "metrics": metrics, "cells": cells,
            "ratios": ratios, "failures": failures, "reruns": reruns, "lock_stats": stats}


def samples_of(doc):
    """A document's samples, as collect() gave them."""
    return {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c["rounds"]
            for c in doc["cells"]}


def refresh(doc):
    """The document with its medians, ratios and intervals computed anew
    from its rounds: a document saved before a figure was added to them
    shows it too."""
    doc["cells"], doc["ratios"] = analyse(samples_of(doc))
    return doc


def pool(docs):
    """One document of several saved runs of one tool: each cell's rounds
    end to end (in the order of docs), medians, ratios and intervals
    recomputed from them. Runs keep their names behind the number of their
    document ("2/000_r0_virtio_2_ours-on"), as the same matrix names its
    runs alike every time. A ValueError when the tools differ."""
    tools = {doc["tool"] for doc in docs}
    if len(tools) != 1:
        raise ValueError("cannot pool documents of different tools: " + ", ".join(sorted(tools)))
    samples, failures, reruns, stats = {}, [], [], {}
    for number, doc in enumerate(docs, 1):
        for key, values in samples_of(doc).items():
            samples.setdefault(key, []).extend(values)
        failures += [{**f, "run": f"{number}/{f['run']}"} for f in doc["failures"]]
        reruns += [{**r, "run": f"{number}/{r['run']}"} for r in doc.get("reruns", [])]
        stats.update({f"{number}/{run}": rows for run, rows in doc["lock_stats"].items()})
    first = docs[0]
    meta = {"started": first["started"], "minutes": sum(d["minutes"] for d in docs),
            "host_mode": first["host_mode"], "rounds": sum(d["rounds"] for d in docs),
            "options": first["options"],
            "pooled": [{k: d.get(k) for k in ("started", "rounds", "options", "logs")}
                       for d in docs]}
    metrics = {k: v for d in docs for k, v in d["metrics"].items()}
    return document(first["tool"], metrics, (samples, failures, reruns, stats), meta)
