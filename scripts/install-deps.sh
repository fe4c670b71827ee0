#!/usr/bin/env bash
# Install what building and testing need on Debian 12 (run as root).
# The reference QEMU is the bench's outer host and the comparison column,
# never a dependency of our binary.
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
