"""npm's qemu-qmp drives a Linux guest on the bench: the same independently
written client as test_qmp_client.py (tests/qmp-client/drive.mjs), run in
L1 against the L2's VMM, ours and Debian's QEMU in one batch.

node (with its libraries) and a tarball of tests/qmp-client go into L1 as
bench files for this batch only. The L2 guest (test_qmp_linux's power
button guest, under -no-shutdown) waits for its ACPI power button. The
first client session queries, stops, continues and resets; once Linux has
booted again, the second powers the guest down (Linux acts on the button),
queries the stopped VM and quits.
"""

import json
import shutil
import tarfile

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from test_qmp_client import CLIENT_DIR
from test_qmp_linux import POWER_GUEST, POWER_MARKER

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")

FIRST = [
    {"execute": "query-status"},
    {"execute": "stop", "events": ["STOP"]},
    {"execute": "query-status"},
    {"execute": "cont", "events": ["RESUME"]},
    {"execute": "system_reset", "events": ["RESET"]},
]
SECOND = [
    {"execute": "system_powerdown", "events": ["POWERDOWN", "SHUTDOWN"]},
    {"execute": "query-status"},
    {"execute": "quit", "events": ["SHUTDOWN"], "close": True},
]


def scenario(steps):
    # @SOCK@ becomes the fragment's own socket path in L1.
    return {"socket": "@SOCK@", "steps": steps,
            "connect_timeout_ms": 60000, "step_timeout_ms": 90000}


def client_files(tmp_path_factory):
    """{bench file name: host path}: node and the client with its scenarios."""
    node = shutil.which("node")
    if not node or not (CLIENT_DIR / "node_modules" / "qemu-qmp").is_dir():
        pytest.fail("npm's qemu-qmp is not installed: run scripts/install-deps.sh "
                    "(node and npm, then npm ci in tests/qmp-client)")
    work = tmp_path_factory.mktemp("qmp-client")
    for name, steps in (("first", FIRST), ("second", SECOND)):
        (work / f"{name}.json").write_text(json.dumps(scenario(steps)))
    tarball = work / "qmp-client.tar"
    with tarfile.open(tarball, "w") as tar:
        for name in ("drive.mjs", "package.json", "node_modules"):
            tar.add(CLIENT_DIR / name, arcname=name)
        for name in ("first", "second"):
            tar.add(work / f"{name}.json", arcname=f"{name}.json")
    return {"node": node, "qmp-client.tar": str(tarball)}


def client_run(name):
    """L1 shell: one client session; its report on a line "npm-NAME=JSON"."""
    return f"""
sed "s|@SOCK@|$WORK/n.sock|" "$WORK/client/{name}.json" |
    (cd "$WORK/client" && node drive.mjs) > "$WORK/{name}.out" 2> "$WORK/{name}.err"
echo "npm-{name}=$(tr -d '\\n' < "$WORK/{name}.out")"
sed 's/^/node: /' "$WORK/{name}.err"
"""


def fragment(kind, vmm):
    # Rebooting allowed: under -no-reboot system_reset shuts down.
    args = l2_args(POWER_GUEST, smp=1, exit_port=False, no_reboot=False, extra=[
        "-no-shutdown", "-qmp", '"unix:$WORK/n.sock,server=on,wait=off"'])
    script = (f"guest_start n 480 {args}\n"
              f"if guest_wait_for n {POWER_MARKER} 180; then\n"
              'mkdir -p "$WORK/client" && tar -xf "$BENCH_FILES/qmp-client.tar" -C "$WORK/client"\n'
              + client_run("first")
              # The reset is real: Linux boots again and waits for its button.
              + "d=$(($(uptime_s) + 180))\n"
              f'while [ "$(grep -c {POWER_MARKER} "$WORK/n.log")" -lt 2 ] && '
              '[ "$(uptime_s)" -lt "$d" ]; do sleep 0.2; done\n'
              + client_run("second")
              + "fi\nguest_wait n\n")
    return Fragment(f"{kind}_npm_linux", script, vmm, limit=540)


def bench_batch(session):
    frags = [fragment(kind, vmm) for kind, vmm in (("ours", session.our_vmm),
                                                    ("reference", REFERENCE)) if vmm]
    return frags, client_files(session.tmp_path_factory)


def report(output, name):
    found = [line.split("=", 1)[1] for line in output.splitlines()
             if line.startswith(f"npm-{name}=")]
    assert found and found[0], f"no report of the {name} session:\n{output}"
    result = json.loads(found[0])
    assert "failure" not in result, (result, output)
    return result["steps"]


@pytest.mark.parametrize("kind", ["ours", "reference"])
def test_npm_client_drives_linux(runs, kind):
    outcome = kvmhost.outcome_or_skip(runs, f"{kind}_npm_linux")
    out = outcome.output
    g = expect_guest(outcome, "n", vmm_status=0,
                     contains=[r"^button=event\d+$", "^power-button-pressed$"], show_script=True)
    first = report(out, "first")
    assert [step.get("return") for step in first] == [
        {"status": "running", "singlestep": False, "running": True}, {},
        {"status": "paused", "singlestep": False, "running": False}, {}, {}], first
    assert [step["events"] for step in first] == [[], ["STOP"], [], ["RESUME"], ["RESET"]], first
    assert g.log.count(POWER_MARKER) == 2, g.log

    second = report(out, "second")
    assert [step.get("return") for step in second] == [
        {}, {"status": "shutdown", "singlestep": False, "running": False}, {}], second
    # -no-shutdown: the guest's power-off (SHUTDOWN) stops the VM (STOP,
    # which may arrive after the step that waited for SHUTDOWN ended) and
    # the VMM waits for quit.
    assert [event for step in second for event in step["events"]] == [
        "POWERDOWN", "SHUTDOWN", "STOP", "SHUTDOWN"], second
    assert second[2]["closed"], second
