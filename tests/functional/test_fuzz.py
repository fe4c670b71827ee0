"""The libFuzzer harness of the platform devices (tests/fuzz): a clang
ASan+UBSan build in build-fuzz (./configure --enable-fuzzing), then a
bounded fuzzing run that starts from the seed corpus and must end without
a crash, a sanitizer report, a leak or a hang. The structured seeds are
checked to be what tests/fuzz/storage_seeds.py and e1000_seeds.py make,
and to reach what they are for: data through IDE's bus-master DMA, ATAPI
and virtio-blk's queues to the disk image and back; frames from the wire
through the e1000's filters and checksum checks into its RX ring."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from kvmhost import REPO

sys.path.insert(0, str(REPO / "tests" / "fuzz"))
import e1000_seeds  # noqa: E402
import storage_seeds  # noqa: E402
import virtio_net_seeds  # noqa: E402

BUILDDIR = REPO / "build-fuzz"
FUZZER = BUILDDIR / "tests" / "fuzz" / "fuzz-platform"
CORPUS = REPO / "tests" / "fuzz" / "corpus"
FUZZ_SECONDS = 60
SEED_SCRIPTS = {"storage_seeds.py": storage_seeds, "e1000_seeds.py": e1000_seeds,
                "virtio_net_seeds.py": virtio_net_seeds}
SEED_CHECKS = {**storage_seeds.SEED_CHECKS, **e1000_seeds.SEED_CHECKS,
               **virtio_net_seeds.SEED_CHECKS}
SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "ERROR: libFuzzer", "==ERROR:")

PROBE = "int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n"


def libfuzzer_missing(tmp_path):
    """Why clang cannot link a fuzzer here, or None if it can."""
    if not shutil.which("clang"):
        return "clang is not installed (scripts/install-deps.sh)"
    probe = subprocess.run(["clang", "-fsanitize=fuzzer,address,undefined", "-x", "c", "-",
                            "-o", str(tmp_path / "probe")], input=PROBE, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode != 0:
        return "clang cannot link libFuzzer (libclang-rt-14-dev): " + probe.stdout
    return None


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory):
    reason = libfuzzer_missing(tmp_path_factory.mktemp("probe"))
    if reason:
        pytest.skip(reason)
    if not (BUILDDIR / "build.ninja").exists():
        subprocess.run([str(REPO / "configure"), f"--builddir={BUILDDIR.name}",
                        "--enable-fuzzing"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    # Only the harness and the library: the unit suites have their own builds.
    subprocess.run(["ninja", "-C", str(BUILDDIR), str(FUZZER.relative_to(BUILDDIR))],
                   check=True, stdout=subprocess.DEVNULL)
    return FUZZER


def test_fuzz_platform_devices(fuzzer, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    run = subprocess.run(
        [str(fuzzer), f"-max_total_time={FUZZ_SECONDS}", "-rss_limit_mb=2048", "-timeout=10",
         "-print_final_stats=1", f"-artifact_prefix={artifacts}/", str(corpus)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=FUZZ_SECONDS + 60)
    found = sorted(p.name for p in artifacts.iterdir())
    # The report is at the end; the beginning is the corpus being loaded.
    report = run.stdout[-20000:]
    assert run.returncode == 0 and not found, (
        f"fuzz-platform failed (status {run.returncode}); reproduce with "
        f"FUZZ_TRACE=1 {fuzzer} <input>; inputs kept in {artifacts}: {found}\n{report}")
    assert not any(r in run.stdout for r in SANITIZER_REPORTS), report
    # It really fuzzed: every seed loaded, and many more inputs ran.
    executed = re.search(r"stat::number_of_executed_units: (\d+)", run.stdout)
    assert executed and int(executed.group(1)) > 1000, report
    seeds = re.search(r"(\d+) files found in " + re.escape(str(corpus)), run.stdout)
    assert seeds and int(seeds.group(1)) == len(list(CORPUS.iterdir())), report


def test_seeds_are_current():
    for script, module in SEED_SCRIPTS.items():
        for name, make in module.SEEDS.items():
            assert (CORPUS / name).read_bytes() == make(), (
                f"tests/fuzz/corpus/{name} differs from what {script} makes: run "
                f"python3 tests/fuzz/{script} tests/fuzz/corpus")


def traced_reads(fuzzer, seed):
    """The last value each 8-byte memory read of the seed returned, by address."""
    run = subprocess.run([str(fuzzer), str(CORPUS / seed)], env=dict(os.environ, FUZZ_TRACE="1"),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60)
    assert run.returncode == 0, run.stdout[-5000:]
    return {int(a, 16): int(v, 16)
            for a, v in re.findall(r"mem read  (0x[0-9a-f]+)/8 = (0x[0-9a-f]+)", run.stdout)}


@pytest.mark.parametrize("seed", sorted(SEED_CHECKS))
def test_seed_reaches_its_device(fuzzer, seed):
    reads = traced_reads(fuzzer, seed)
    for addr, expected in SEED_CHECKS[seed]:
        assert reads.get(addr) == expected, (
            f"{seed}: guest RAM at {addr:#x} reads {reads.get(addr, 0):#x}, expected "
            f"{expected:#x}: the seed no longer gets its data through the device")
