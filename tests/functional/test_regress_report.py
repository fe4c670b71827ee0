"""The regression scripts (scripts/regress) without a bench: the matrix
order, the results document and its table, the baseline comparison, the
tiobench figures from fio's json+ output, and the command line on a saved
document."""

import copy
import json
import shutil
import statistics
import subprocess
import sys

import pytest

import kvmhost

sys.path.insert(0, str(kvmhost.REPO / "scripts/regress"))

from regresslib import chart, matrix, report, results, tiobench_workload  # noqa: E402
from regresslib.iperf_workload import Iperf  # noqa: E402
from regresslib.neighbours_workload import Neighbours  # noqa: E402

SCRIPTS = kvmhost.REPO / "scripts/regress"


def iperf_console(*rates):
    """A guest console with one iperf3 run per rate (receiver side)."""
    runs = [f"Connecting to host 10.0.2.2, port 5201\n"
            f"[  5]   0.00-3.00   sec  10 MBytes  {r + 1} Mbits/sec   sender\n"
            f"[  5]   0.00-3.00   sec  10 MBytes  {r} Mbits/sec   receiver\n" for r in rates]
    return "KIT-READY\n" + "".join(runs) + (
        "lock statistics (device-lock=on):\n"
        "  lock             type                 acquired    contended        wait-ms\n"
        "  global           (global)                    0            0          0.000\n"
        "  e1000-0          e1000                    1200           30         12.500\n")


def fake_outcomes(runs, hung):
    """Outcomes as the harness parses them: every run gives rates except
    the one named hung, whose guest was killed at its limit."""
    text = ""
    for i, run in enumerate(runs):
        console = "KIT-READY\n" if run.name == hung else iperf_console(100 + i, 200 + i)
        status = "rc=137 killed=timeout" if run.name == hung else "rc=1"
        text += (f"@@TEST-BEGIN {run.name}\n@@GUEST-BEGIN net\n{console}\n"
                 f"@@GUEST-END net {status}\n@@TEST-END {run.name} rc=0\n")
    parsed = kvmhost.parse_batch(text)
    return {run: parsed[run.name] for run in runs}


@pytest.fixture
def iperf_doc():
    workload = Iperf()
    args = type("Args", (), {"quick": False, "seconds": 3, "streams": "1", "pin": "none"})()
    workload.configure(args)
    runs = matrix.plan(2, ["e1000", "virtio"], [1], ["ours-on", "ours-off", "qemu"])
    outcomes = fake_outcomes(runs, hung="010_r1_virtio_1_ours-off")
    doc = results.document("iperf", workload.metrics, results.collect(workload, runs, outcomes),
                           {"started": "2026-12-01 00:00 UTC", "minutes": 1.0,
                            "host_mode": "nested", "rounds": 2, "options": {"seconds": 3}})
    return json.loads(json.dumps(doc))        # what the JSON file holds


def test_plan_alternates_configurations_inside_each_round():
    runs = matrix.plan(2, ["ide", "virtio-blk"], [1, 2], ["ours-on", "qemu"])
    assert [r.name for r in runs[:4]] == ["000_r0_ide_1_ours-on", "001_r0_ide_1_qemu",
                                          "002_r0_virtio-blk_1_ours-on", "003_r0_virtio-blk_1_qemu"]
    # The bench runs a batch in the order of the names.
    assert sorted(runs, key=lambda r: r.name) == runs
    groups = matrix.batches(runs)
    assert [(g[0].round, g[0].vcpus, len(g)) for g in groups] == [(0, 1, 4), (0, 2, 4),
                                                                  (1, 1, 4), (1, 2, 4)]
    assert matrix.usable_vcpus([1, 2, 4], cores=2) == ([1, 2], [4])


def test_l1_vcpus_default_to_the_guests_and_follow_the_option(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(matrix.kvmhost, "run_batch", lambda frags, **_: seen.append(
        (matrix.os.environ["BENCH_L1_SMP"], matrix.os.environ["VMM_TEST_L1_PARALLEL"])) or {})
    monkeypatch.setattr(matrix.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("BENCH_L1_SMP", raising=False)
    monkeypatch.setenv("VMM_TEST_L1_PARALLEL", "2")
    workload = type("Workload", (), {"files": {}, "fragment": lambda self, run: run})()
    runs = matrix.plan(1, ["net"], [1, 2], ["ours-on"])
    matrix.execute(workload, runs, tmp_path)
    matrix.execute(workload, runs, tmp_path, l1_vcpus=1)
    # One L1 at a time for a measurement, then the caller's settings again:
    # the test suite runs its own batches two L1 hosts at once afterwards.
    assert seen == [("1", "1"), ("2", "1"), ("1", "1"), ("1", "1")]
    assert "BENCH_L1_SMP" not in matrix.os.environ
    assert matrix.os.environ["VMM_TEST_L1_PARALLEL"] == "2"


def test_progress_line_counts_runs_and_estimates_time_left(tmp_path):
    (tmp_path / "a.nested.1.data.log").write_text(
        "@@TEST-BEGIN r0_x\n@@TEST-END r0_x rc=0\n@@TEST-BEGIN r0_y\n")
    progress = matrix.Progress(tmp_path, 4)
    assert progress.state() == ({"r0_x"}, "r0_y")
    assert matrix.format_progress(1, 4, "r0_y", 90) == "[1/4] r0_y, 1:30 elapsed, about 4:30 left"
    assert "estimate after the first run" in matrix.format_progress(0, 4, None, 5)


def test_document_has_rounds_medians_ratios_and_the_hung_run(iperf_doc):
    cells = {(c["device"], c["test"], c["vmm"]): c for c in iperf_doc["cells"]}
    assert len(cells) == 2 * 2 * 3        # devices x directions x VMMs
    on = cells[("e1000", "tcp-1 g->h", "ours-on")]
    assert on["rounds"] == [100, 106] and on["median"] == 103
    hung = cells[("virtio", "tcp-1 g->h", "ours-off")]
    assert hung["rounds"] == [104, None] and hung["median"] == 104
    assert iperf_doc["failures"] == [{
        "run": "010_r1_virtio_1_ours-off", "round": 1, "device": "virtio", "vcpus": 1,
        "vmm": "ours-off", "reason": "hung: the guest was killed at its time limit"}]
    ratio = next(r for r in iperf_doc["ratios"]
                 if (r["device"], r["test"]) == ("e1000", "tcp-1 h->g"))
    assert ratio["on/off"] == pytest.approx(203 / 204) and ratio["on/qemu"] == pytest.approx(203 / 205)
    assert iperf_doc["lock_stats"]["000_r0_e1000_1_ours-on"] == [
        {"lock": "e1000-0", "type": "e1000", "acquired": 1200, "contended": 30, "wait_ms": 12.5}]
    assert "002_r0_e1000_1_qemu" not in iperf_doc["lock_stats"]


def test_table_shows_rounds_median_ratios_and_fail(iperf_doc):
    lines = report.table(iperf_doc).splitlines()
    assert lines[0] == "| device | vCPUs | test | unit | ours-on | ours-off | qemu | on/off | on/qemu | off/qemu |"
    assert "| e1000 | 1 | tcp-1 g->h | Mbit/s | 100 106 [103] | 101 107 [104] | 102 108 [105] | 0.99 | 0.98 | 0.99 |" in lines
    assert any(line.startswith("| virtio | 1 | tcp-1 g->h |") and "104 FAIL [104]" in line
               for line in lines)
    assert report.failures(iperf_doc) == [
        "FAIL 010_r1_virtio_1_ours-off: hung: the guest was killed at its time limit"]


def test_ratio_interval_holds_the_ratio_and_is_the_same_every_time():
    top, bottom = [120, 131, 118, 125, 140, 122], [100, 104, 97, 110, 101, 99]
    interval = results.ratio_interval(top, bottom)
    point = statistics.median(top) / statistics.median(bottom)
    assert interval[0] < point < interval[1]
    assert results.ratio_interval(top, bottom) == interval
    # Samples apart from each other: the whole interval is above 1.
    assert interval[0] > 1
    # Overlapping samples: it straddles 1.
    lo, hi = results.ratio_interval([100, 120, 95, 110, 105], [105, 98, 115, 102, 108])
    assert lo < 1 < hi


def test_ratio_interval_needs_three_figures_a_side():
    assert results.ratio_interval([100, 110, None], [90, 95, 99]) is None
    assert results.ratio_interval([100, 110, 105], [90, 95, 99]) is not None
    assert results.ratio_interval([100, 110, 105], [0, 0, 0]) is None


def test_two_rounds_give_ratios_without_intervals(iperf_doc):
    entry = next(r for r in iperf_doc["ratios"] if r["device"] == "e1000")
    assert entry["intervals"] == {"on/off": None, "on/qemu": None, "off/qemu": None}


def test_pool_puts_rounds_end_to_end_and_recomputes(iperf_doc):
    later = with_rounds(iperf_doc, "virtio", "tcp-1 g->h", "ours-on", [300, 310])
    doc = results.pool([iperf_doc, later])
    cells = {(c["device"], c["test"], c["vmm"]): c for c in doc["cells"]}
    on = cells[("virtio", "tcp-1 g->h", "ours-on")]
    assert on["rounds"] == [103, 109, 300, 310] and on["median"] == (109 + 300) / 2
    off = cells[("virtio", "tcp-1 g->h", "ours-off")]
    assert off["rounds"] == [104, None, 104, None] and off["median"] == 104
    entry = next(r for r in doc["ratios"] if (r["device"], r["test"]) == ("virtio", "tcp-1 g->h"))
    assert entry["on/qemu"] == pytest.approx(on["median"] / statistics.median([105, 111] * 2))
    lo, hi = entry["intervals"]["on/qemu"]
    assert lo <= entry["on/qemu"] <= hi
    assert entry["intervals"]["on/off"] is None        # two figures of ours-off
    assert doc["rounds"] == 4 and [p["rounds"] for p in doc["pooled"]] == [2, 2]
    assert [f["run"] for f in doc["failures"]] == ["1/010_r1_virtio_1_ours-off",
                                                   "2/010_r1_virtio_1_ours-off"]
    assert "2/000_r0_e1000_1_ours-on" in doc["lock_stats"]
    assert "(" in report.table(doc).splitlines()[-1]     # the interval is shown
    with pytest.raises(ValueError, match="different tools"):
        results.pool([iperf_doc, {**iperf_doc, "tool": "tiobench"}])


def with_rounds(doc, device, test, vmm, rounds):
    doc = copy.deepcopy(doc)
    for cell in doc["cells"]:
        if (cell["device"], cell["test"], cell["vmm"]) == (device, test, vmm):
            cell["rounds"] = rounds
    return doc


def test_chart_has_a_bar_per_vmm_and_a_gap_for_a_missing_median(iperf_doc):
    doc = with_median(iperf_doc, "virtio", "tcp-1 g->h", "ours-off", None)
    text = chart.script(doc, ["Mbit/s"], "out.png")
    assert '"e1000 1v tcp-1 g->h" 103 104 105' in text
    assert '"virtio 1v tcp-1 g->h" 106 NaN 108' in text
    assert text.count(":xtic(1)") == 3


def with_median(doc, device, test, vmm, factor, metric="Mbit/s"):
    doc = copy.deepcopy(doc)
    for cell in doc["cells"]:
        if (cell["device"], cell["test"], cell["vmm"], cell["metric"]) == (device, test, vmm, metric):
            cell["median"] = None if factor is None else cell["median"] * factor
    return doc


def test_baseline_reports_a_fall_beyond_the_threshold(iperf_doc):
    now = with_median(iperf_doc, "e1000", "tcp-1 h->g", "ours-on", 0.8)
    fell, missing = report.compare(iperf_doc, now, 10)
    assert fell == ["e1000 1 vCPU tcp-1 h->g Mbit/s ours-on: 203 -> 162 (-20%)"]
    assert missing == []


def test_baseline_ignores_rises_and_noise_under_the_threshold(iperf_doc):
    now = with_median(iperf_doc, "e1000", "tcp-1 h->g", "ours-on", 1.5)
    now = with_median(now, "virtio", "tcp-1 g->h", "qemu", 0.92)
    assert report.compare(iperf_doc, now, 10) == ([], [])
    # The same 8% is a fall with a threshold of 5%.
    assert len(report.compare(iperf_doc, now, 5)[0]) == 1


def test_baseline_direction_follows_the_metric():
    """Latency falls when it rises; the >2 s share is never compared."""
    cell = {"device": "ide", "vcpus": 1, "test": "read-1", "vmm": "ours-on"}
    doc = {"metrics": tiobench_workload.METRICS, "cells": [
        {**cell, "metric": "avg ms", "median": 1.0}, {**cell, "metric": ">2s %", "median": 1.0},
        {**cell, "metric": "MB/s", "median": 50.0}]}
    now = copy.deepcopy(doc)
    for c in now["cells"]:
        c["median"] *= 0.5 if c["metric"] == "avg ms" else 3
    assert report.compare(doc, now, 10) == ([], [])
    for c in now["cells"]:
        c["median"] = 2.0 if c["metric"] == "avg ms" else None
    fell, missing = report.compare(doc, now, 10)
    assert fell == ["ide 1 vCPU read-1 avg ms ours-on: 1 -> 2 (+100%)"]
    assert missing == ["ide 1 vCPU read-1 MB/s ours-on: no result now (baseline 50)"]


FIO_JSON_PLUS = """{
  "jobs" : [
    {
      "jobname" : "randwrite",
      "job options" : {
        "rw" : "randwrite"
      },
      "read" : {
        "bw" : 0,
        "clat_ns" : {
          "N" : 0
        },
        "lat_ns" : {
          "max" : 0,
          "mean" : 0.000000
        }
      },
      "write" : {
        "bw" : 20480,
        "slat_ns" : {
          "max" : 99,
          "mean" : 1.0
        },
        "clat_ns" : {
          "max" : 12000000000,
          "mean" : 5.0,
          "percentile" : {
            "99.000000" : 1302528
          },
          "bins" : {
            "1000" : 96,
            "2500000000" : 3,
            "12000000000" : 1
          }
        },
        "lat_ns" : {
          "max" : 12000000100,
          "mean" : 2500000.0
        }
      },
      "usr_cpu" : 5.0,
      "sys_cpu" : 15.0
    }
  ]
}
"""


def test_tiobench_columns_from_fio_json_plus_reduced_in_the_guest():
    reduced = subprocess.run(["sh", "-c", tiobench_workload.REDUCE], input=FIO_JSON_PLUS,
                             text=True, stdout=subprocess.PIPE, check=True).stdout
    assert "2500000000" not in reduced and "percentile" in reduced
    figures = tiobench_workload.parse_log(f"fio-job=randwrite-2\n{reduced}fio-job=read-2\n")
    assert figures == {("randwrite-2", "MB/s"): 20.0, ("randwrite-2", "avg ms"): 2.5,
                       ("randwrite-2", "max ms"): pytest.approx(12000.0001),
                       ("randwrite-2", ">2s %"): 4.0, ("randwrite-2", ">10s %"): 1.0,
                       ("randwrite-2", "CPU eff"): 100.0}


def test_tiobench_guest_command_fits_the_kernel_command_line():
    command = tiobench_workload.guest_command("sda", [1, 2, 4], tiobench_workload.JOBS, 10)
    assert "--direct=1" in command and "--bs=4k" in command
    # kit.cmd is base64 on a command line of at most 2048 bytes.
    assert len(command) * 4 / 3 < 1500


def test_command_line_compares_a_saved_document(iperf_doc, tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps(iperf_doc))
    now = tmp_path / "now.json"
    # --report computes the medians from the rounds: the rounds fall by half.
    now.write_text(json.dumps(with_rounds(iperf_doc, "virtio", "tcp-1 g->h", "ours-on", [52, 55])))
    run = subprocess.run([str(SCRIPTS / "iperf"), "--report", str(now), "--baseline", str(base),
                          "--chart", str(tmp_path / "chart.png")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 3, run.stdout
    assert "FELL virtio 1 vCPU tcp-1 g->h Mbit/s ours-on" in run.stdout
    assert "| e1000 | 1 | tcp-1 g->h | Mbit/s |" in run.stdout
    if shutil.which("gnuplot"):
        assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "no chart: gnuplot is not installed" in run.stdout
    same = subprocess.run([str(SCRIPTS / "iperf"), "--report", str(base), "--baseline", str(base),
                           "--chart", str(tmp_path / "same.png")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert same.returncode == 0, same.stdout
    assert "0 cell(s) fell" in same.stdout


def test_command_line_shows_intervals_of_a_document_saved_without_them(iperf_doc, tmp_path):
    doc = with_rounds(iperf_doc, "e1000", "tcp-1 g->h", "ours-on", [130, 128, 135])
    doc = with_rounds(doc, "e1000", "tcp-1 g->h", "qemu", [100, 104, 99])
    for entry in doc["ratios"]:
        del entry["intervals"]
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(doc))
    run = subprocess.run([str(SCRIPTS / "iperf"), "--report", str(saved),
                          "--chart", str(tmp_path / "old.png")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 0, run.stdout
    row = next(line for line in run.stdout.splitlines()
               if line.startswith("| e1000 | 1 | tcp-1 g->h |"))
    assert "130 128 135 [130]" in row and "| 1.30 (1.23-1.36) |" in row, row


def test_command_line_pools_saved_documents(iperf_doc, tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(iperf_doc))
    second.write_text(json.dumps(with_rounds(iperf_doc, "e1000", "tcp-1 g->h", "ours-on",
                                             [300, 310])))
    run = subprocess.run([str(SCRIPTS / "iperf"), "--report", f"{first},{second}",
                          "--chart", str(tmp_path / "pool.png")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.count("pooled: 2026-12-01 00:00 UTC, 2 round(s)") == 2
    assert "| e1000 | 1 | tcp-1 g->h | Mbit/s | 100 106 300 310 [203] |" in run.stdout
    pooled = json.loads((tmp_path / "a.pooled.json").read_text())
    assert pooled["rounds"] == 4 and len(pooled["failures"]) == 2
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({**iperf_doc, "tool": "tiobench"}))
    run = subprocess.run([str(SCRIPTS / "iperf"), "--report", f"{first},{bad}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 1
    assert run.stdout.strip() == ("scripts/regress/iperf: cannot pool documents of "
                                  "different tools: iperf, tiobench")


@pytest.mark.parametrize("args, message", [
    (["--devices", "floppy"], "--devices: unknown floppy (known: ide, virtio-blk)"),
    (["--vmms", "bochs"], "--vmms: unknown bochs (known: ours-on, ours-off, ours-nobatch, ours-nothp, qemu)"),
    (["--vcpus", "two"], "--vcpus: numbers, e.g. 1,2,4 (not two)"),
    (["--baseline", "/nonexistent.json"],
     "--baseline /nonexistent.json: [Errno 2] No such file or directory: '/nonexistent.json'"),
])
def test_command_line_names_a_bad_option(args, message):
    """Before anything runs: a bad option costs no bench time."""
    run = subprocess.run([str(SCRIPTS / "tiobench"), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 1
    assert run.stdout.strip() == f"scripts/regress/tiobench: {message}"


def test_neighbours_kept_fraction():
    workload = Neighbours()
    args = type("Args", (), {"quick": False, "seconds": 5})()
    assert workload.configure(args) == {"seconds": 10}
    both = workload.parse(matrix.Run(0, "both", 2, "ours-on"),
                          "  read: IOPS=1.5k, BW=6000KiB/s (6MB/s)\n" + iperf_console(80))
    assert both == {("disk", "IOPS"): 1500.0, ("net", "Mbit/s"): 80}
    assert workload.parse(matrix.Run(0, "net", 2, "ours-on"), iperf_console(100)) == {
        ("net", "Mbit/s"): 100}
    cell = {"vcpus": 2, "vmm": "ours-on", "metric": "-"}
    doc = {"cells": [{**cell, "device": "net", "test": "net", "median": 100.0},
                     {**cell, "device": "disk", "test": "disk", "median": 2000.0},
                     {**cell, "device": "both", "test": "net", "median": 80.0},
                     {**cell, "device": "both", "test": "disk", "median": 1500.0}],
           "lock_stats": {"002_r0_both_2_ours-on": [
               {"lock": "ide-channel0", "type": "piix3-ide-channel", "acquired": 2291,
                "contended": 38, "wait_ms": 1.8},
               {"lock": "i440fx0", "type": "i440FX", "acquired": 34222, "contended": 0,
                "wait_ms": 0.0}]}}
    doc.update(workload.summary(doc))
    assert {(k["test"], k["kept"]) for k in doc["kept"]} == {("net", 0.8), ("disk", 0.75)}
    text = workload.report(doc)
    assert "| 2 | ours-on | disk | 2000 | 1500 | 0.75 |" in text
    assert "| 002_r0_both_2_ours-on | ide-channel0 | piix3-ide-channel | 2291 | 38 | 1.8 |" in text
    assert "i440fx0" not in text         # never waited for


@pytest.mark.parametrize("pin,cpu", [("same", 0), ("split", 1)])
def test_pin_places_iperf3_and_the_nic_interrupts(pin, cpu):
    iperf = Iperf()
    iperf.configure(type("Args", (), {"quick": False, "seconds": 5, "streams": "1,4", "pin": pin})())
    two = iperf.fragment(matrix.Run(0, "virtio", 2, "qemu")).script
    assert two.count(f"taskset -c {cpu} iperf3 -c") == 4     # 1 and 4 streams, both ways
    assert "echo 1 > /proc/irq/$irq/smp_affinity" in two
    one = iperf.fragment(matrix.Run(0, "virtio", 1, "qemu")).script    # nothing to choose
    assert "taskset" not in one and "smp_affinity" not in one


def test_fragments_boot_each_configuration_with_its_devices():
    args = type("Args", (), {"quick": True, "seconds": 5, "streams": "1,4", "runtime": 10, "pin": "none",
                             "threads": "1,2,4", "jobs": ",".join(tiobench_workload.JOBS)})()
    iperf = Iperf()
    iperf.configure(args)
    frag = iperf.fragment(matrix.Run(0, "vhost", 2, "ours-off", seq=7))
    assert frag.name == "007_r0_vhost_2_ours-off" and frag.vmm == matrix.OURS
    assert "-machine pc,device-lock=off,lock-stats=on" in frag.script
    assert "tap,id=n0,ifname=tap0,script=no,downscript=no,vhost=on" in frag.script
    assert "-smp 2" in frag.script and "tap_create tap0" in frag.script
    assert not iperf.supports("e1000-nocoal", "qemu") and iperf.supports("e1000", "qemu")
    assert "taskset" not in frag.script and "smp_affinity" not in frag.script     # --pin none
    tio = tiobench_workload.Tiobench()
    assert tio.configure(args)["threads"] == [1]          # --quick
    frag = tio.fragment(matrix.Run(0, "virtio-blk", 1, "qemu"))
    assert frag.vmm == matrix.REFERENCE and "-machine pc " in frag.script
    assert frag.script.startswith(tiobench_workload.DISK_SETUP)
    assert '-device virtio-blk-pci,drive=d0' in frag.script and "initrd-fio.cpio" in frag.script
    busy = Neighbours()
    busy.configure(args)
    frag = busy.fragment(matrix.Run(0, "both", 2, "ours-on"))
    assert "virtio-net-pci,netdev=n0" in frag.script and "cache=none,aio=native,if=ide" in frag.script
