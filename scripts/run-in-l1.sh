#!/usr/bin/env bash
# Boot the nested bench host (L1) and run something in it.
#
#   scripts/run-in-l1.sh --vmm NAME=PATH [--vmm NAME=PATH ...]
#                        (--tests DIR | --run SCRIPT) [options]
#
# L1 is Debian's kernel under the outer qemu-system-x86_64 (TCG, -cpu EPYC),
# with kvm-amd loaded: a KVM host with real SVM semantics on any machine,
# including those whose /dev/kvm cannot run Linux. Each VMM binary is copied
# in with the shared libraries it links (and QEMU's firmware files) and is
# available in L1 as /bench/bin/NAME (any other executable, a benchmark
# program or a guest kernel, comes in the same way); the L2 kit is in /kit.
#
#   --tests DIR     a batch of test fragments (see tests/functional/kvmhost/
#                   hostlib.sh); L1 runs them all and powers off
#   --run SCRIPT    run SCRIPT in L1 with the console as its terminal
#                   (interactive; the outer QEMU's escape key is Ctrl-b, so
#                   Ctrl-a reaches the VMM under test)
#   --limit SECS    hard limit for the whole L1 boot (default 900); the outer
#                   QEMU is then killed with SIGKILL
#   --smp N --mem SIZE   L1's CPUs and memory (default 2 and 4G)
#   --log FILE      also write L1's console to FILE
# The exit status is L1's "L1-EXIT=" status, or 125 if L1 never reported
# one (crashed, hung or killed at its limit).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
source "$here/lib/kit.sh"

vmms=() tests= run= limit=900 smp=2 mem=4G log=
while [ $# -gt 0 ]; do
    case "$1" in
    --vmm) vmms+=("$2"); shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    *) kit_die "unknown option $1 (see the header of $0)" ;;
    esac
done
[ -n "$tests$run" ] || kit_die "give --tests DIR or --run SCRIPT"
OUTER=${BENCH_OUTER_QEMU:-qemu-system-x86_64}
command -v "$OUTER" >/dev/null || kit_die "$OUTER not found: apt-get install qemu-system-x86"

kit=$("$here/build-guest-kit.sh" --print-dir)
work=$(mktemp -d "${TMPDIR:-/tmp}/vmm-l1.XXXXXX")
trap 'rm -rf "$work"' EXIT
payload=$work/payload
mkdir -p "$payload/bench/bin"

for spec in "${vmms[@]}"; do
    name=${spec%%=*} path=${spec#*=}
    [ -x "$path" ] || kit_die "VMM $path is not an executable"
    path=$(readlink -f "$path")
    kit_copy_elf / "$path" "$payload"
    ln -sf "$path" "$payload/bench/bin/$name"
done
# QEMU's firmware and option ROMs, at the paths QEMU looks for them.
for dir in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
    [ -d "$dir" ] && mkdir -p "$payload$(dirname "$dir")" && cp -a "$dir" "$payload$dir"
done
cp "$repo/tests/functional/kvmhost/hostlib.sh" "$payload/bench/hostlib.sh"
if [ -n "$tests" ]; then
    cp -r "$tests" "$payload/bench/tests"
    cat > "$payload/bench/run" <<'RUN'
#!/bin/sh
export KIT=/kit BENCH_HOSTLIB=/bench/hostlib.sh BENCH_FILES=/bench/bin PATH=/bench/bin:$PATH
. /bench/hostlib.sh
bench_run_all /bench/tests
RUN
    mode=bench.run=1
else
    { echo '#!/bin/sh'
      echo 'export KIT=/kit BENCH_HOSTLIB=/bench/hostlib.sh BENCH_FILES=/bench/bin PATH=/bench/bin:$PATH'
      echo '. /bench/hostlib.sh'
      cat "$run"; } > "$payload/bench/run"
    mode=
fi
chmod 755 "$payload/bench/run"
kit_cpio "$payload" "$work/payload.cpio"
cat "$kit/l1/base.cpio" "$work/payload.cpio" > "$work/initrd.cpio"

# mitigations=off: L1 is a disposable test host on an emulated CPU, where
# speculation mitigations only cost time. (L1's occasional kernel crash,
# "TASK stack guard page was hit" after a KVM_RUN, happens with and without
# them: docs/testing.md.)
outer=("$OUTER" -accel tcg -cpu EPYC -smp "$smp" -m "$mem" -no-reboot
       -kernel "$kit/l1/bzImage" -initrd "$work/initrd.cpio"
       -append "console=ttyS0 quiet panic=-1 mitigations=off $mode"
       -nodefaults -display none -device isa-debug-exit)
if [ -n "$tests" ]; then
    # Batch: console to a file that this script follows; the limit ends in
    # SIGKILL because a stuck outer QEMU may ignore SIGTERM.
    console=${log:-$work/console.log}
    : > "$console"
    # The outer QEMU's stderr (TCG's warnings about CPU features it cannot
    # emulate) is shown only when L1 fails.
    timeout -s KILL "$limit" "${outer[@]}" -serial "file:$console" \
        < /dev/null 2> "$work/outer.err" &
    pid=$!
    tail -f --pid="$pid" "$console" &
    wait "$pid" || true
    wait
    status=$(tr -d '\r' < "$console" | sed -n 's/^L1-EXIT=\([0-9]*\)$/\1/p' | tail -n 1)
    if [ -z "$status" ]; then
        echo "run-in-l1: L1 ended without reporting a status; outer QEMU said:" >&2
        grep -v "TCG doesn't support requested feature" "$work/outer.err" >&2 || true
    fi
else
    console=${log:-/dev/null}
    "${outer[@]}" -echr 0x02 -serial mon:stdio | tee "$console"
    status=0
fi
exit "${status:-125}"
