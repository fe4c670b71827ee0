"""scripts/regress/iperf and scripts/regress/tiobench --quick on the bench:
one short run per device (ours, device-lock=on, 1 vCPU, one round, no
reference), each script one L1 boot, the two at once. The JSON must have
every cell with a figure, every throughput, latency and efficiency above
zero, and our lock statistics for each run."""

import json
import subprocess

import pytest

import kvmhost

SCRIPTS = kvmhost.REPO / "scripts/regress"
EXPECTED = {
    # tool: (devices, tests, metrics)
    "iperf": ({"e1000", "virtio", "vhost"}, {"tcp-1 g->h", "tcp-1 h->g"}, {"Mbit/s"}),
    "tiobench": ({"ide", "virtio-blk"}, {"write-1", "randwrite-1", "read-1", "randread-1"},
                 {"MB/s", "avg ms", "max ms", ">2s %", ">10s %", "CPU eff"}),
}


@pytest.fixture(scope="module")
def quick_runs(our_vmm):
    # Kept after the session, beside the runs' logs, for a developer to read.
    out = kvmhost.REPO / "build/regress"
    out.mkdir(parents=True, exist_ok=True)
    procs = {tool: subprocess.Popen([str(SCRIPTS / tool), "--quick", "--no-reference",
                                     "--json", str(out / f"quick-{tool}.json")],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for tool in EXPECTED}
    logs = {tool: proc.communicate()[0] for tool, proc in procs.items()}
    return {tool: (procs[tool].returncode, logs[tool], out / f"quick-{tool}.json")
            for tool in EXPECTED}


@pytest.mark.parametrize("tool", sorted(EXPECTED))
def test_quick_run_gives_every_figure(quick_runs, tool):
    rc, log, path = quick_runs[tool]
    assert rc == 0, log
    doc = json.loads(path.read_text())
    devices, tests, metrics = EXPECTED[tool]
    assert doc["tool"] == tool and doc["rounds"] == 1 and doc["vmms"] == ["ours-on"]
    assert doc["failures"] == [], log
    cells = {(c["device"], c["test"], c["metric"]): c for c in doc["cells"]}
    assert set(cells) == {(d, t, m) for d in devices for t in tests for m in metrics}
    for key, cell in cells.items():
        assert cell["vcpus"] == 1 and cell["vmm"] == "ours-on" and len(cell["rounds"]) == 1
        value = cell["median"]
        if doc["metrics"][key[2]]["better"] is None:      # the shares of slow requests
            assert value is not None and 0 <= value <= 100, (key, log)
        else:
            assert value and value > 0, (key, log)
    # Ours ran with lock-stats=on: each run's statistics are kept.
    assert {run.split("_", 1)[1] for run in doc["lock_stats"]} == {
        f"r0_{d}_1_ours-on" for d in devices}
    assert all(doc["lock_stats"].values()), doc["lock_stats"]
    assert "| device | vCPUs | test | unit | ours-on |" in log
