#!/usr/bin/env bash
# Install what building and testing need on Debian 12 (run as root).
# The reference QEMU is the bench's outer host and the comparison column,
# never a dependency of our binary.
#
# The QMP client tests (tests/functional/test_qmp_client.py) drive the VMM
# with npm's qemu-qmp, an independently written client, pinned by
# tests/qmp-client/package-lock.json and installed there with `npm ci`
# (node_modules is not committed). Debian's nodejs and npm are installed
# unless a node and an npm are already on the PATH (a NodeSource nodejs
# includes npm and conflicts with Debian's npm package). Running the script
# again is cheap: apt-get skips what is installed and `npm ci` runs only
# when the lock file changed since the last install.
set -euo pipefail
packages=(
    # build
    gcc libc6-dev make meson ninja-build pkg-config libglib2.0-dev liburcu-dev
    # the block layer's aio=native and aio=io_uring
    libaio-dev liburing-dev
    # -netdev user
    libslirp-dev
    # QMP's JSON
    libjson-glib-dev
    # -sandbox
    libseccomp-dev
    # guest kits: apt-get download, dpkg-deb, cpio, depmod, readelf, xz
    apt dpkg cpio kmod binutils xz-utils
    # test harness and the host side of guest tests
    python3 python3-pytest iproute2 iperf3 fio
    # the storage tests: an ISO for the CD-ROM, e2fsck/debugfs on the host side
    genisoimage e2fsprogs
    # the fuzz build (configure --enable-fuzzing): clang and its libFuzzer/ASan runtimes
    clang libclang-rt-14-dev
    # test-acpi disassembles the generated DSDT with iasl
    acpica-tools
    # the regression scripts' charts (scripts/regress)
    gnuplot-nox
    # the bench's outer host and the reference VMM
    qemu-system-x86 qemu-utils
)
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: run as root (apt-get install)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" > /dev/null
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
    apt-get install -y -qq --no-install-recommends nodejs npm > /dev/null
fi

qmp_client_dir="$(cd "$(dirname "$0")/../tests/qmp-client" && pwd)"
lock_sum="$(sha256sum "$qmp_client_dir/package-lock.json" | cut -d' ' -f1)"
stamp="$qmp_client_dir/node_modules/.installed-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    (cd "$qmp_client_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sum" > "$stamp"
fi
