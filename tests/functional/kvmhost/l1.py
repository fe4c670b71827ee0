"""One boot of the nested bench host L1: start it, watch it, always end it.

scripts/run-in-l1.sh boots L1 and runs a batch of fragments in it. This
module starts that script, reads L1's two streams as they grow (stream.py),
gives L1 up as soon as it is dying or stuck, and makes sure no outer QEMU
outlives the batch, nor the Python process that started it: every L1 is
named "bench-l1-<TAG>" (-name), tracked here, and killed by end_all() when
the batch ends early, and at exit.

An L1 is given up when
  - its kernel console shows a fatal sign (soft lockup, stack guard page,
    panic, RCU stall, oops...): after FATAL_GRACE seconds, so that the trace
    is complete in the console log;
  - its heartbeat (init-l1 writes one to the kernel log every 10 s) stops
    for HEARTBEAT_LIMIT seconds: a host that hangs without a word;
  - its batch output stays silent past the running fragment's own limit
    plus FRAGMENT_SLACK (L1 enforces that limit itself, so it must have
    printed the fragment's end by then), or QUIET_LIMIT between fragments.
"""

import atexit
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .stream import BatchStream, L1Console

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
TAG = str(os.getpid())

QUIET_LIMIT = 300           # seconds: boot to the first fragment, or between fragments
FRAGMENT_SLACK = 60         # seconds past a running fragment's own limit
HEARTBEAT_LIMIT = 90        # seconds without a heartbeat, once the first came
FATAL_GRACE = 10            # seconds a dying L1 may go on printing its trace
POLL = 1.0                  # seconds between two reads of the streams

_live = {}                  # pid -> Popen of every run-in-l1.sh still running


@dataclasses.dataclass
class L1Run:
    outcomes: dict          # {fragment name: stream.Outcome}, open ones included
    fate: str               # "done", or why L1 did not finish the batch
    evidence: str           # the end of L1's kernel console when it did not


class L1Watch:
    """Decides when an L1 is lost; fed the streams and the clock."""

    def __init__(self, limits, start):
        self.limits = limits            # {fragment name: seconds}
        self.batch = BatchStream()
        self.console = L1Console()
        self._data_at = start           # last time the batch output moved
        self._events = 0
        self._beat_at = None            # last heartbeat
        self._beats = 0
        self._fatal_at = None

    def step(self, now, data="", console=""):
        """Feed what arrived since the last step; returns why L1 must be
        given up, or None while it may go on."""
        if data:
            self.batch.feed(data)
            self._data_at = now
        if console:
            self.console.feed(console)
        if self.console.heartbeats != self._beats:
            self._beats, self._beat_at = self.console.heartbeats, now
        if self.console.fatal and self._fatal_at is None:
            self._fatal_at = now
        if self._fatal_at is not None and now - self._fatal_at >= FATAL_GRACE:
            return f"L1's kernel: {self.console.fatal}"
        if self._beat_at is not None and now - self._beat_at > HEARTBEAT_LIMIT:
            return f"L1's heartbeat stopped {now - self._beat_at:.0f} s ago"
        running = self.batch.running
        allowed = self.limits.get(running, 0) + FRAGMENT_SLACK if running else QUIET_LIMIT
        if now - self._data_at > allowed:
            where = f"in fragment {running}" if running else "between fragments"
            return f"L1 printed nothing for {now - self._data_at:.0f} s {where}"
        return None


class _Tail:
    """New text of a growing file."""

    def __init__(self, path):
        self.path, self.offset = path, 0

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return ""
        self.offset += len(chunk)
        return chunk.decode(errors="replace")


def run(batch_dir, limits, log_prefix, vmms, limit, kit):
    """Boot L1 on the fragments in batch_dir ({name: limit} in limits);
    vmms is {name in /bench/bin: host path}; kit is the guest kit directory,
    already checked. Logs go to log_prefix.console.log and
    log_prefix.data.log."""
    console_log = Path(f"{log_prefix}.console.log")
    data_log = Path(f"{log_prefix}.data.log")
    monitor = Path(batch_dir).parent / "l1-monitor.sock"
    cmd = [str(SCRIPTS / "run-in-l1.sh"), "--tests", str(batch_dir), "--limit", str(limit),
           "--log", str(console_log), "--data", str(data_log), "--tag", TAG,
           "--monitor", str(monitor), "--kit", str(kit)]
    for name, path in vmms.items():
        cmd += ["--vmm", f"{name}={path}"]
    for stale in (console_log, data_log):
        stale.unlink(missing_ok=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _live[proc.pid] = proc
    watch = L1Watch(limits, time.monotonic())
    data, console = _Tail(data_log), _Tail(console_log)
    reason = None
    try:
        while reason is None and proc.poll() is None:
            time.sleep(POLL)
            reason = watch.step(time.monotonic(), data.read(), console.read())
        if reason is not None:
            # Where L1's CPUs were: the evidence of a hang that printed nothing.
            Path(f"{log_prefix}.l1-cpus.log").write_text(
                _ask_monitor(monitor, "info registers -a"))
    finally:
        _end(proc)
    watch.step(time.monotonic(), data.read(), console.read())
    outcomes = watch.batch.close()
    done = any(line.startswith("L1-EXIT=") for line in data_log.read_text(
        errors="replace").splitlines()) if data_log.exists() else False
    if reason is None:
        reason = "done" if done else "L1 ended without finishing the batch"
    evidence = "" if reason == "done" else watch.console.evidence()
    return L1Run(outcomes, reason, evidence)


def _ask_monitor(path, command, timeout=20):
    """The outer QEMU's answer to a human-monitor command, asked through
    its QMP socket ("" if it does not answer)."""
    requests = [{"execute": "qmp_capabilities"},
                {"execute": "human-monitor-command", "arguments": {"command-line": command}}]
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            replies = sock.makefile("r")
            replies.readline()                      # the greeting
            for request in requests:
                sock.sendall(json.dumps(request).encode() + b"\n")
                while "return" not in (reply := json.loads(replies.readline() or "{}")):
                    if not reply or "error" in reply:
                        return f"monitor {path}: {reply}\n"
            return reply["return"]
    except (OSError, ValueError) as err:
        return f"monitor {path}: {err}\n"


def _end(proc):
    """End run-in-l1.sh and everything in its process group, the outer QEMU
    included (run-in-l1.sh keeps it there)."""
    if proc.poll() is None:
        # TERM first: the script's exit trap kills L1 and removes its files.
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()
    _live.pop(proc.pid, None)


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def end_all():
    """End every L1 this process started that is still running."""
    for proc in list(_live.values()):
        _end(proc)
    for pid in surviving_l1s():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def surviving_l1s(tag=TAG):
    """Pids of the outer QEMUs named bench-l1-TAG that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"bench-l1-{tag}".encode() in args:
            found.append(int(entry.name))
    return found


def end_all_on_exit():
    """End every L1 when this process ends: at a normal exit, and at SIGTERM
    or SIGHUP (CI's own limit, a user's kill), which then take the normal
    exit path instead of killing Python on the spot."""
    atexit.register(end_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
