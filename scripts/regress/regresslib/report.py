"""What a regression document (results.document) shows: the table on the
terminal and the comparison with a saved baseline."""

from .results import RATIOS

FAILED = "FAIL"


def number(value):
    """A figure in about three significant digits; '-' when there is none."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if value else "0"


def ratio(value):
    return "-" if value is None else f"{value:.2f}"


def ratio_with_interval(value, interval):
    """A ratio, and its bootstrap interval where the document has one."""
    if value is None or not interval:
        return ratio(value)
    return f"{ratio(value)} ({ratio(interval[0])}-{ratio(interval[1])})"


def rows(doc, metrics):
    """(device, vcpus, test, metric) rows of the doc in its own order."""
    return list(dict.fromkeys((c["device"], c["vcpus"], c["test"], c["metric"])
                              for c in doc["cells"] if c["metric"] in metrics))


def vmms_of(doc):
    order = ["ours-on", "ours-off", "ours-nobatch", "ours-nothp", "qemu"]
    present = {c["vmm"] for c in doc["cells"]}
    return [v for v in order if v in present]


def table(doc, metrics=None):
    """Markdown table: per VMM the figure of every round then the median
    (in brackets), then the ratios of medians (on/off: per-device lock
    against the global lock; on/qemu, off/qemu: ours against the
    reference), each with its 90% bootstrap interval in parentheses where
    both sides have enough rounds (results.ratio_interval). A round
    without a figure shows FAIL (see the failures)."""
    metrics = metrics or list(doc["metrics"])
    vmms = vmms_of(doc)
    cells = {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c
             for c in doc["cells"]}
    ratios = {(r["device"], r["vcpus"], r["test"], r["metric"]): r for r in doc["ratios"]}
    shown = [name for name in RATIOS if any(name in r for r in doc["ratios"])]
    lines = ["| device | vCPUs | test | unit | " + " | ".join(vmms + shown) + " |",
             "|---" * (4 + len(vmms) + len(shown)) + "|"]
    for row in rows(doc, metrics):
        out = [row[0], str(row[1]), row[2], row[3]]
        for vmm in vmms:
            cell = cells.get((*row, vmm))
            if cell is None:
                out.append("")
                continue
            rounds = " ".join(FAILED if v is None else number(v) for v in cell["rounds"])
            out.append(f"{rounds} [{number(cell['median'])}]" if len(cell["rounds"]) > 1
                       else rounds)
        entry = ratios.get(row, {})
        out += [ratio_with_interval(entry.get(name), entry.get("intervals", {}).get(name))
                for name in shown]
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


def wide_table(doc, vmm, metrics):
    """One VMM's medians with the metrics as columns (tiobench's layout)."""
    cells = {(c["device"], c["vcpus"], c["test"], c["metric"]): c["median"]
             for c in doc["cells"] if c["vmm"] == vmm}
    rows = list(dict.fromkeys(key[:3] for key in cells))
    lines = ["| device | vCPUs | test | " + " | ".join(metrics) + " |",
             "|---" * (3 + len(metrics)) + "|"]
    for row in rows:
        lines.append(f"| {row[0]} | {row[1]} | {row[2]} | "
                     + " | ".join(number(cells.get((*row, m))) for m in metrics) + " |")
    return "\n".join(lines)


def failures(doc):
    """Lines naming each run without figures and each rerun."""
    out = [f"FAIL {f['run']}: {f['reason']}" for f in doc["failures"]]
    out += [f"rerun {r['run']}: {r['reason']}" for r in doc.get("reruns", [])]
    return out


def lock_table(doc):
    """Where the contention went: run by run, each lock of ours that a
    thread had to wait for (the JSON has every lock taken)."""
    lines = ["| run | lock | type | acquired | contended | wait (ms) |",
             "|---|---|---|---|---|---|"]
    for run, rows in doc["lock_stats"].items():
        for r in rows:
            if not r["contended"]:
                continue
            lines.append(f"| {run} | {r['lock']} | {r['type']} | {r['acquired']} | "
                         f"{r['contended']} | {r['wait_ms']:.1f} |")
    return "\n".join(lines)


def compare(baseline, doc, threshold):
    """(fell, missing) against a baseline document: fell names every cell
    whose median moved the wrong way (down where higher is better, up where
    lower is better) by more than threshold percent; missing names the
    baseline's cells with a median that have none now (not counted as a
    fall: the bench loses runs on its own, docs/testing.md)."""
    now = {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c["median"]
           for c in doc["cells"]}
    fell, missing = [], []
    for cell in baseline["cells"]:
        key = (cell["device"], cell["vcpus"], cell["test"], cell["metric"], cell["vmm"])
        better = baseline["metrics"].get(cell["metric"], {}).get("better")
        old, new = cell["median"], now.get(key)
        name = f"{key[0]} {key[1]} vCPU {key[2]} {key[3]} {key[4]}"
        if not better or not old:
            continue
        if new is None:
            if key in now:
                missing.append(f"{name}: no result now (baseline {number(old)})")
            continue
        change = (new - old) / old * 100
        worse = -change if better == "higher" else change
        if worse > threshold:
            fell.append(f"{name}: {number(old)} -> {number(new)} ({change:+.0f}%)")
    return fell, missing
