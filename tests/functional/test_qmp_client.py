"""An independently written QMP client drives the VMM: npm's qemu-qmp
(pinned in tests/qmp-client, installed by scripts/install-deps.sh), through
tests/qmp-client/drive.mjs, against a running tiny guest. Debian's QEMU runs
the same scenario as the reference column.

What the client can see is what it reports: answers ("return", or an
error's description: it drops the class) and event names (it drops their
data). The events the issue names are all checked here; their data is
checked with tests/functional/qmp_client.py by the tests of their owners.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from vmm_process import VMMS, guest_args, terminate, vmm_path, wait_console

CLIENT_DIR = Path(__file__).resolve().parents[1] / "qmp-client"
DRIVER = CLIENT_DIR / "drive.mjs"
GUEST_NAME = "qmp-client-test"


@pytest.fixture(scope="module")
def node():
    path = shutil.which("node")
    if not path or not (CLIENT_DIR / "node_modules" / "qemu-qmp").is_dir():
        pytest.fail("npm's qemu-qmp is not installed: run scripts/install-deps.sh "
                    "(node and npm, then npm ci in tests/qmp-client)")
    return path


def drive(node, socket, steps, timeout=120):
    """Run steps through the npm client; its report (a dict)."""
    scenario = {"socket": str(socket), "steps": steps,
                "connect_timeout_ms": 30000, "step_timeout_ms": 30000}
    done = subprocess.run([node, str(DRIVER)], input=json.dumps(scenario), cwd=CLIENT_DIR,
                          capture_output=True, text=True, timeout=timeout)
    assert done.stdout, f"the driver printed nothing: {done.stderr}"
    report = json.loads(done.stdout)
    assert "failure" not in report and done.returncode == 0, (report, done.stderr)
    return report


def answers(report):
    return {step["execute"]: step for step in report["steps"]}


@pytest.fixture(params=VMMS)
def vmm(request, our_vmm, tiny_kernels, tmp_path):
    """A VMM running the tiny guest with a QMP socket: (which, proc, socket,
    console)."""
    which = request.param
    socket, console = tmp_path / "qmp.sock", tmp_path / "console.txt"
    log = open(tmp_path / "vmm.log", "w")
    proc = subprocess.Popen([vmm_path(which, our_vmm),
                             *guest_args(which, tiny_kernels / "tiny.elf", console),
                             "-name", GUEST_NAME,
                             "-qmp", f"unix:{socket},server=on,wait=off"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            wait_console(console, "tiny: hello", proc=proc)
        except AssertionError as err:
            raise AssertionError(f"{err}: {(tmp_path / 'vmm.log').read_text()}") from None
        yield which, proc, socket, console
    finally:
        terminate(proc)
        log.close()


def test_npm_client_queries_stops_resets_powers_down_and_quits(node, vmm):
    which, proc, socket, console = vmm

    # First connection: the queries, then stop, cont and a reset.
    report = drive(node, socket, [
        {"execute": "query-version"},
        {"execute": "query-status"},
        {"execute": "query-name"},
        {"execute": "no-such-command"},
        {"execute": "stop", "events": ["STOP"]},
        {"execute": "query-status"},
        {"execute": "cont", "events": ["RESUME"]},
        {"execute": "system_reset", "events": ["RESET"]},
    ])
    greeting = report["greeting"]
    qemu = greeting["version"]["qemu"]
    assert (qemu["major"], qemu["minor"]) == (7, 2), greeting
    assert isinstance(qemu["micro"], int) and isinstance(greeting["version"]["package"], str)
    assert isinstance(greeting["capabilities"], list), greeting

    steps = report["steps"]
    version = steps[0]["return"]
    assert set(version) == {"qemu", "package"} and version["qemu"] == qemu, version
    assert steps[1]["return"] == {"status": "running", "singlestep": False, "running": True}
    assert steps[2]["return"] == {"name": GUEST_NAME}
    assert steps[3]["error"] == "The command no-such-command has not been found"
    assert "return" not in steps[3]
    assert steps[4]["return"] == {} and steps[4]["events"] == ["STOP"], steps[4]
    assert steps[5]["return"] == {"status": "paused", "singlestep": False, "running": False}
    assert steps[6]["return"] == {} and steps[6]["events"] == ["RESUME"], steps[6]
    assert steps[7]["return"] == {} and steps[7]["events"] == ["RESET"], steps[7]
    assert not any(step["closed"] for step in steps), steps
    # The reset is real: the guest boots a second time.
    wait_console(console, "tiny: hello", count=2, proc=proc)

    # A second connection (the server takes a new client): power button,
    # then quit, which ends the VMM with status 0.
    report = drive(node, socket, [
        {"execute": "system_powerdown", "events": ["POWERDOWN"]},
        {"execute": "quit", "events": ["SHUTDOWN"], "close": True},
    ])
    powerdown, quit_ = report["steps"]
    assert powerdown["return"] == {} and powerdown["events"] == ["POWERDOWN"], powerdown
    # The tiny guest has no ACPI driver: the power button changes nothing,
    # so the VMM is still there to answer quit (polling the process here
    # would race quit's exit).
    assert quit_["return"] == {} and quit_["events"] == ["SHUTDOWN"], quit_
    assert quit_["closed"], quit_
    assert proc.wait(30) == 0
