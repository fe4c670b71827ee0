"""The PNG chart of a regression document, drawn by Debian's gnuplot
(gnuplot-nox): one panel per metric, a group of bars per (device, vCPUs,
test), one bar per VMM configuration, each bar the median of the rounds."""

import shutil
import subprocess

from .report import rows, vmms_of

TITLES = {"ours-on": "ours, device-lock=on", "ours-off": "ours, device-lock=off",
          "ours-nobatch": "ours, io-sched-batch=off",
          "ours-nothp": "ours, x-ram-thp=off", "qemu": "Debian's QEMU"}


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def script(doc, metrics, png):
    """The gnuplot program (the data inline) for doc's metrics."""
    vmms = vmms_of(doc)
    medians = {(c["device"], c["vcpus"], c["test"], c["metric"], c["vmm"]): c["median"]
               for c in doc["cells"]}
    panels = [m for m in metrics if rows(doc, [m])]
    groups = max((len(rows(doc, [m])) for m in panels), default=1)
    lines = [f"set terminal pngcairo size {max(800, 90 * groups)},{360 * max(1, len(panels))}",
             f"set output {_quote(str(png))}",
             "set style data histograms", "set style histogram clustered gap 1",
             "set style fill solid 0.8 border -1", "set xtics rotate by -30 font ',8'",
             "set key below", "set grid ytics", "set yrange [0:*]",
             f"set multiplot layout {max(1, len(panels))},1"]
    for i, metric in enumerate(panels):
        lines.append(f"$d{i} << EOD")
        for row in rows(doc, [metric]):
            label = f"{row[0]} {row[1]}v {row[2]}"
            values = [medians.get((*row, v)) for v in vmms]
            lines.append(_quote(label) + " " + " ".join("NaN" if v is None else f"{v:g}"
                                                         for v in values))
        lines.append("EOD")
        lines.append(f"set title {_quote(doc['tool'] + ': ' + metric + ' (median of the rounds)')}")
        lines.append(f"set ylabel {_quote(metric)}")
        plots = [f"$d{i} using {j + 2}:xtic(1) title {_quote(TITLES[v])}"
                 for j, v in enumerate(vmms)]
        lines.append("plot " + ", ".join(plots))
    lines.append("unset multiplot")
    return "\n".join(lines) + "\n"


def draw(doc, metrics, png):
    """Write the chart; returns None, or why there is none."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "no chart: gnuplot is not installed (apt-get install gnuplot-nox)"
    proc = subprocess.run([gnuplot], input=script(doc, metrics, png), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        return f"no chart: gnuplot failed: {proc.stdout.strip()[-300:]}"
    return None
