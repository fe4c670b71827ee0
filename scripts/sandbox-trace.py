#!/usr/bin/env python3
"""Which system calls each kind of thread makes once -sandbox on is in,
against the lists of softmmu/sandbox-syscalls.c (docs/sandbox.md).

    strace -f -ff -tt -o /tmp/t/trace qemu-system-x86_64 -sandbox on ...
    scripts/sandbox-trace.py /tmp/t/trace

One strace file per thread (-ff). The main thread is the one that ran
execve; it counts from its successful seccomp(SECCOMP_SET_MODE_FILTER,
TSYNC) on (libseccomp probes with failing ones first). A
vCPU thread is one that calls KVM_RUN; it counts from its own seccomp
call. Every other thread (I/O threads, workers, liburcu's) counts from
the main thread's load on, by timestamp (-tt). A call outside its kind's
lists is marked MISSING: under the sandbox it would have killed the VMM.
"""

import collections
import glob
import pathlib
import re
import sys

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "softmmu" / "sandbox-syscalls.c"
LINE = re.compile(r"^(\d\d:\d\d:\d\d\.\d+) ([a-z_0-9]+)\(")
# Allowed to every thread by rule, not by list (sandbox.c allow_threads;
# sched_setscheduler only to SCHED_OTHER).
THREAD_RULES = {"clone", "clone3", "prctl", "sched_setscheduler"}


def lists():
    """{list name: set of calls} from the C arrays."""
    text = SOURCE.read_text()
    found = {}
    for name, body in re.findall(r"static const char \*const (\w+)\[\] = \{(.*?)\};", text, re.S):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        found[name] = set(re.findall(r'"([a-z_0-9]+)"', body))
    return found


def parse(path):
    """[(timestamp, call)] of one thread's file."""
    calls = []
    for line in pathlib.Path(path).read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            calls.append((m.group(1), m.group(2), line))
    return calls


def after(calls, predicate):
    """The calls after the first one for which predicate holds (None: never)."""
    for i, (_, _, line) in enumerate(calls):
        if predicate(line):
            return calls[i + 1:], calls[i][0]
    return None, None


def main(prefix):
    threads = {p: parse(p) for p in sorted(glob.glob(prefix + ".*"))}
    main_file = next(p for p, c in threads.items() if any(n == "execve" for _, n, _ in c[:1]))
    main_calls, loaded_at = after(threads[main_file], lambda l: "SECCOMP_FILTER_FLAG_TSYNC" in l and l.endswith(" = 0"))
    if main_calls is None:
        sys.exit("no TSYNC seccomp call in the main thread: was -sandbox on given?")
    kinds = collections.defaultdict(collections.Counter)
    kinds["main"].update(n for _, n, _ in main_calls)
    for path, calls in threads.items():
        if path == main_file:
            continue
        if any("KVM_RUN" in line for _, _, line in calls):
            mine, _ = after(calls, lambda l: " seccomp(" in l and l.endswith(" = 0"))
            kinds["vcpu"].update(n for _, n, _ in mine or [])
        else:
            kinds["other"].update(n for t, n, _ in calls if t > loaded_at)
    allowed = lists()
    process = set().union(*allowed.values()) | THREAD_RULES
    vcpu = allowed["vcpu_syscalls"] | THREAD_RULES
    missing = 0
    for kind, counter in sorted(kinds.items()):
        print(f"== {kind} threads")
        for call, count in counter.most_common():
            ok = call in (vcpu if kind == "vcpu" else process)
            missing += not ok
            print(f"  {call:24} {count:8}{'' if ok else '  MISSING'}")
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
