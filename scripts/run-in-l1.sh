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
# program, comes in the same way, and so does a data file such as a disc
# image, without libraries); the L2 kit is in /kit.
#
#   --tests DIR     a batch of test fragments (see tests/functional/kvmhost/
#                   hostlib.sh); L1 runs them all and powers off
#   --run SCRIPT    run SCRIPT in L1 with the console as its terminal
#                   (interactive; the outer QEMU's escape key is Ctrl-b, so
#                   Ctrl-a reaches the VMM under test)
#   --limit SECS    hard limit for the whole L1 boot (default 900); the outer
#                   QEMU is then killed with SIGKILL
#   --smp N --mem SIZE   L1's CPUs and memory (default 2 and 4G)
#   --log FILE      also write L1's kernel console to FILE
#   --data FILE     with --tests: write the batch's framed output to FILE
#                   (it also goes to stdout)
#   --tag TAG       name the outer QEMU "bench-l1-TAG" (-name), so that a
#                   harness can find and end every L1 it started
#   --monitor SOCK  with --tests: the outer QEMU's QMP monitor on the unix
#                   socket SOCK (the harness asks it for L1's CPU state when
#                   it gives up a hung L1)
#   --kit DIR       the guest kit directory, as build-guest-kit.sh
#                   --print-dir gave it: a caller that boots many L1 hosts
#                   checks the kit once (the check takes about 3 s) and
#                   passes it; without it each boot checks, building if needed
#
# In batch mode the framed output travels on L1's second serial port, apart
# from L1's kernel console: kernel messages never split a line of it.
#
# For experiments on the bench itself (scripts/bench-soak), these variables
# replace the defaults of the outer QEMU and L1's kernel:
#   BENCH_OUTER_QEMU   the outer QEMU binary (qemu-system-x86_64)
#   BENCH_L1_ACCEL     its -accel option (tcg)
#   BENCH_L1_CPU       its -cpu option ($L1_CPU below)
#   BENCH_L1_APPEND    words added to L1's kernel command line, module
#                      parameters included (kvm_amd.npt=0)
# The exit status is L1's "L1-EXIT=" status, or 125 if L1 never reported
# one (crashed, hung or killed at its limit).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
source "$here/lib/kit.sh"

vmms=() tests= run= limit=900 smp=${BENCH_L1_SMP:-1} mem=4G log= data= tag=$$ monitor= kit=
while [ $# -gt 0 ]; do
    case "$1" in
    --vmm) vmms+=("$2"); shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --monitor) monitor=$2; shift 2 ;;
    --kit) kit=$2; shift 2 ;;
    *) kit_die "unknown option $1 (see the header of $0)" ;;
    esac
done
[ -n "$tests$run" ] || kit_die "give --tests DIR or --run SCRIPT"
OUTER=${BENCH_OUTER_QEMU:-qemu-system-x86_64}
command -v "$OUTER" >/dev/null || kit_die "$OUTER not found: apt-get install qemu-system-x86"

[ -n "$kit" ] || kit=$("$here/build-guest-kit.sh" --print-dir)
[ -r "$kit/l1/base.cpio" ] || kit_die "$kit holds no L1 kit (scripts/build-guest-kit.sh builds it)"
work=$(kit_workdir vmm-l1)
trap 'rm -rf "$work"' EXIT
payload=$work/payload
mkdir -p "$payload/bench/bin"

# Programs come with their shared libraries; other files (a disk image
# for a test) as they are.
for spec in "${vmms[@]}"; do
    name=${spec%%=*} path=${spec#*=}
    [ -r "$path" ] || kit_die "$path cannot be read"
    path=$(readlink -f "$path")
    if [ "$(head -c 4 "$path" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
        kit_copy_elf / "$path" "$payload"
    else
        mkdir -p "$payload$(dirname "$path")"
        cp "$path" "$payload$path"
    fi
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

# EPYC less the features TCG cannot emulate: QEMU would drop them anyway,
# with a warning per feature and vCPU at every boot.
L1_CPU=EPYC,-rdseed,-sha-ni,-fxsr-opt,-misalignsse,-3dnowprefetch,-osvw,-topoext,-nrip-save,-xsavec
# mitigations=off: L1 is a disposable test host on an emulated CPU, where
# speculation mitigations only cost time. hpet=off: with an HPET, Linux puts
# it in legacy replacement mode, which cuts the PIT off IRQ 0, and L1's
# init needs the PIT's interrupts (init-l1: pit_safety_net).
outer=("$OUTER" -accel "${BENCH_L1_ACCEL:-tcg}" -cpu "${BENCH_L1_CPU:-$L1_CPU}"
       -smp "$smp" -m "$mem" -no-reboot -name "bench-l1-$tag"
       -kernel "$kit/l1/bzImage" -initrd "$work/initrd.cpio"
       -append "console=ttyS0 quiet panic=-1 mitigations=off $mode ${BENCH_L1_APPEND:-}"
       -machine hpet=off -nodefaults -display none -device isa-debug-exit)
if [ -n "$tests" ]; then
    # Batch: the kernel console (ttyS0) and the batch's output (ttyS1) go to
    # files; this script follows the second. The limit ends in SIGKILL
    # because a stuck outer QEMU may ignore SIGTERM. --foreground keeps the
    # outer QEMU in this script's process group, so that whoever ends the
    # group ends L1 too (plain timeout would move it to a group of its own
    # and leave it running, orphaned, until its limit).
    console=${log:-$work/console.log} data=${data:-$work/data.log}
    : > "$console"
    : > "$data"
    [ -z "$monitor" ] || outer+=(-qmp "unix:$monitor,server=on,wait=off")
    timeout --foreground -s KILL "$limit" "${outer[@]}" \
        -serial "file:$console" -serial "file:$data" < /dev/null 2> "$work/outer.err" &
    pid=$!
    trap 'kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT
    trap 'exit 143' TERM INT HUP
    tail -f --pid="$pid" "$data" &
    wait "$pid" || true
    wait
    status=$(tr -d '\r' < "$data" | sed -n 's/^L1-EXIT=\([0-9]*\)$/\1/p' | tail -n 1)
    if [ -z "$status" ]; then
        echo "run-in-l1: L1 ended without reporting a status; its console ended with:" >&2
        tail -n 20 "$console" >&2
        cat "$work/outer.err" >&2
    fi
else
    console=${log:-/dev/null}
    "${outer[@]}" -echr 0x02 -serial mon:stdio | tee "$console"
    status=0
fi
exit "${status:-125}"
