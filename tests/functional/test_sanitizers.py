"""Sanitizer builds: AddressSanitizer + UBSan over the unit suites and the
tiny guests, ThreadSanitizer over the unit suites and an SMP Linux guest
with serial output flowing from both vCPUs under per-device locking."""

import functools
import subprocess

import pytest

import kvmhost
from kvmhost import REPO, Fragment, l2_args

SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer",
                     "ERROR: LeakSanitizer")


@functools.cache
def build(kind):
    builddir = REPO / f"build-{kind}"
    if not (builddir / "build.ninja").exists():
        subprocess.run([str(REPO / "configure"), f"--builddir={builddir.name}",
                        f"--enable-sanitizers={kind}"], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(builddir)], check=True, stdout=subprocess.DEVNULL)
    return builddir


@pytest.fixture(scope="module")
def asan_build():
    return build("address")


@pytest.fixture(scope="module")
def tsan_build():
    return build("thread")


def run_unit_suites(builddir):
    run = subprocess.run(["meson", "test", "-C", str(builddir), "--no-rebuild",
                          "--print-errorlogs"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert run.returncode == 0, run.stdout


def test_asan_ubsan_unit_suites(asan_build):
    run_unit_suites(asan_build)


def test_tsan_unit_suites(tsan_build):
    run_unit_suites(tsan_build)


TINY_RUNS = {1: ("exit=4", 9), 2: ("smp exit=6", 13)}


@pytest.fixture(scope="module")
def asan_tiny_runs(asan_build, tiny_kernels):
    """The ASan build with a tiny guest on 1 and 2 vCPUs: on the local
    /dev/kvm, or in L1 where there is none."""
    frags = [Fragment(f"asan_tiny_smp{smp}",
                      "export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1\n"
                      f"guest_run tiny 60 -accel kvm -m 64M -smp {smp} -nographic -no-reboot "
                      "-device isa-debug-exit,iobase=0xf4,iosize=4 "
                      f"-kernel $BENCH_FILES/tiny.elf -append '{append}'",
                      str(asan_build / "qemu-system-x86_64"), limit=90, up_marker="tiny: hello")
             for smp, (append, _) in TINY_RUNS.items()]
    return kvmhost.run_batch(frags, mode=kvmhost.tiny_guest_mode(),
                             files={"tiny.elf": tiny_kernels / "tiny.elf"})


@pytest.mark.parametrize("smp", sorted(TINY_RUNS))
def test_asan_ubsan_tiny_guests(asan_tiny_runs, smp):
    guest = asan_tiny_runs[f"asan_tiny_smp{smp}"].guest("tiny")
    assert guest.rc == TINY_RUNS[smp][1], guest.log
    assert "tiny: hello" in guest.log
    assert not any(r in guest.log for r in SANITIZER_REPORTS), guest.log


BOTH_CPUS = ("for c in 0 1; do taskset -c $c sh -c "
             "'for i in $(seq 300); do echo from-cpu$1-line-$i; done' sh $c & done; wait; exit 0")


def bench_batch(session):
    """The TSan build's SMP Linux guest, in the session's bench batch."""
    vmm = str(build("thread") / "qemu-system-x86_64")
    args = l2_args(BOTH_CPUS, smp=2, extra=["-machine pc,device-lock=on"],
                   append="kit.halt=reboot")
    return [Fragment("tsan_smp", f"export TSAN_OPTIONS='halt_on_error=0 exitcode=66'\n"
                                 f"guest_run boot 400 {args}", vmm, limit=450)], {}


def test_tsan_smp_linux_guest_with_serial_from_both_vcpus(runs):
    outcome = runs["tsan_smp"]
    guest = kvmhost.expect_guest(outcome, "boot", exit_status=0, vmm_status=1,
                                 contains=["^from-cpu0-line-300$", "^from-cpu1-line-300$"])
    assert not any(r in guest.log for r in SANITIZER_REPORTS), guest.log
