#!/usr/bin/env bash
# Build the guest kits of the test bench from Debian packages.
#
#   scripts/build-guest-kit.sh [--print-dir]
#
# L2 kit (the Linux guest that the VMM under test boots), in $KIT_DIR/l2:
#   bzImage      Debian's linux-image-amd64 kernel
#   vmlinux      the same kernel uncompressed (ELF with the PVH entry note)
#   initrd.cpio  busybox, the ACPI button and evdev, e1000/virtio/ata_piix/uio_pci_generic/qemu_fw_cfg
#                modules, the disk ones (sd_mod, sr_mod/cdrom, ext4, isofs),
#                mke2fs, iperf3, ethtool, the tests/guest programs and an
#                init (scripts/guest/init-l2) driven by the command line
#   initrd-fio.cpio  the same followed by a second archive with fio and its
#                libraries (80 MB: only the disk tests pay for it)
# L1 base (the nested KVM host used where /dev/kvm cannot run Linux), in
# $KIT_DIR/l1:
#   bzImage      the same kernel
#   base.cpio    busybox, the kvm/kvm-amd/kvm-intel, tun, vhost_net and brd
#                modules, iperf3, fio, ip (with netns), e2fsck and debugfs
#                (to check what a guest wrote), strace (the sandbox's
#                lists), netxfer (tests/guest), the
#                L2 kit under /kit and an init
#                (scripts/guest/init-l1) that runs the test script packed
#                beside it by the bench harness
#
# Packages are cached in $KIT_CACHE (default ~/.cache/vmm-kit); the kits are
# rebuilt only when this script, the inits or a package version changes, so
# a second run takes a second. --print-dir prints the kit directory.
source "$(dirname "$0")/lib/kit.sh"
here=$(cd "$(dirname "$0")" && pwd)

KIT_DIR=${KIT_DIR:-$KIT_CACHE/kit}
kernel_pkg=$(kit_kernel_package)
[ -n "$kernel_pkg" ] || kit_die "apt does not know $KIT_KERNEL_PKG (run apt-get update)"
L1_TOOLS=(iperf3 fio iproute2 e2fsprogs strace)
# L2 guests also get pciutils' lspci (busybox-static has none) and ethtool
# (link, offloads and virtio-net's per-queue counters).
L2_TOOLS=(pciutils ethtool)
mapfile -t closure < <(kit_closure "${L1_TOOLS[@]}" "${L2_TOOLS[@]}")
KIT_PACKAGES=("$kernel_pkg" busybox-static "${closure[@]}")

# One builder at a time per kit: the bench starts several L1 hosts at once,
# and each asks for the kit; the first builds it, the others wait and find
# it up to date.
mkdir -p "$(dirname "$KIT_DIR")"
exec 9> "$KIT_DIR.lock"
flock 9

guest_tests=$here/../tests/guest
stamp=$(kit_stamp "$0" "$here/lib/kit.sh" "$here/guest/init-l2" "$here/guest/init-l1" \
        "$here/guest/udhcpc.script" \
        "$guest_tests"/*.c "$here/../include/hw/misc/pdl-testdev-regs.h")
if [ -f "$KIT_DIR/stamp" ] && [ "$(cat "$KIT_DIR/stamp")" = "$stamp" ]; then
    kit_log "kit is up to date in $KIT_DIR"
    [ "${1:-}" = --print-dir ] && echo "$KIT_DIR"
    exit 0
fi

work=$(kit_workdir vmm-kit)
trap 'rm -rf "$work"' EXIT
sysroot=$work/sysroot
kit_log "unpacking ${#KIT_PACKAGES[@]} packages"
kit_fetch_and_unpack "$sysroot" "${KIT_PACKAGES[@]}"

kver=$(ls "$sysroot/lib/modules" | head -n 1)
bzimage=$sysroot/boot/vmlinuz-$kver
[ -f "$bzimage" ] || kit_die "no kernel image in $kernel_pkg"

# The uncompressed kernel: the protected-mode payload of the bzImage starts
# at (setup_sects + 1) * 512 + payload_offset (boot protocol 2.08+).
extract_vmlinux() {
    local setup_sects payload_offset payload_length
    setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$1" | tr -d ' ')
    payload_offset=$(od -An -tu4 -j $((0x248)) -N4 "$1" | tr -d ' ')
    payload_length=$(od -An -tu4 -j $((0x24c)) -N4 "$1" | tr -d ' ')
    dd if="$1" iflag=skip_bytes,count_bytes bs=1M status=none \
        skip=$(( (setup_sects + 1) * 512 + payload_offset )) count="$payload_length" |
        xz -dc --single-stream > "$2" ||
        kit_die "cannot decompress the kernel payload (not XZ?)"
    [ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
        kit_die "the kernel payload is not an ELF image"
}

# ---- L2 kit ----
l2=$work/l2; l2root=$work/l2root
mkdir -p "$l2"
kit_base_root "$sysroot" "$l2root"
# ext4 asks the crypto API for crc32c at mount time (a soft dependency
# that modules.dep does not list): load crc32c_generic before it.
# button (+ evdev, its /dev/input node): the ACPI power button, so that
# system_powerdown reaches the guest.
kit_copy_modules "$sysroot" "$l2root" button evdev e1000 virtio_pci virtio_net virtio_blk \
    ata_piix ata_generic sd_mod sr_mod isofs crc32c_generic ext4 uio_pci_generic qemu_fw_cfg
# e2fsprogs' mke2fs replaces busybox's applet link (which cannot make ext4).
rm -f "$l2root/sbin/mke2fs"
for tool in usr/bin/iperf3 usr/bin/lspci sbin/mke2fs sbin/ethtool; do kit_copy_elf "$sysroot" "$tool" "$l2root"; done
ln -sf mke2fs "$l2root/sbin/mkfs.ext4"
# Guest-side test programs (tests/guest), static so they need nothing else.
for src in "$guest_tests"/*.c; do
    gcc -static -O2 -pthread -Wall -Wextra -I"$here/../include" -o "$l2root/bin/$(basename "$src" .c)" \
        "$src" || kit_die "cannot build $src"
done
install -m 755 "$here/guest/init-l2" "$l2root/init"
install -m 755 "$here/guest/udhcpc.script" "$l2root/etc/udhcpc.script"
cp "$bzimage" "$l2/bzImage"
extract_vmlinux "$bzimage" "$l2/vmlinux"
kit_cpio "$l2root" "$l2/initrd.cpio"
# The fio layer: only what the base lacks. The kernel unpacks concatenated
# archives one after the other into the same root.
fioroot=$work/fioroot
kit_copy_elf "$sysroot" usr/bin/fio "$fioroot"
(cd "$l2root" && find . -type f) | (cd "$fioroot" && xargs rm -f)
kit_cpio "$fioroot" "$work/fio.cpio"
cat "$l2/initrd.cpio" "$work/fio.cpio" > "$l2/initrd-fio.cpio"

# ---- L1 base ----
l1=$work/l1; l1root=$work/l1root
mkdir -p "$l1"
kit_base_root "$sysroot" "$l1root"
# vhost_net brings vhost and tap with it: /dev/vhost-net for vhost=on.
kit_copy_modules "$sysroot" "$l1root" kvm-amd kvm-intel tun vhost_net brd
rm -f "$l1root/sbin/e2fsck" "$l1root/sbin/debugfs"
for tool in usr/bin/iperf3 usr/bin/fio bin/ip sbin/e2fsck sbin/debugfs usr/bin/strace; do
    kit_copy_elf "$sysroot" "$tool" "$l1root"
done
# iproute2's ip replaces busybox's (it can create persistent tap devices).
ln -sf /bin/ip "$l1root/sbin/ip"
# The host end of the network tests' transfers (static: no libraries).
cp "$l2root/bin/netxfer" "$l1root/bin/netxfer"
install -m 755 "$here/guest/init-l1" "$l1root/init"
mkdir -p "$l1root/kit"
cp "$l2/bzImage" "$l2/vmlinux" "$l2/initrd.cpio" "$l2/initrd-fio.cpio" "$l1root/kit/"
cp "$bzimage" "$l1/bzImage"
kit_cpio "$l1root" "$l1/base.cpio"

rm -rf "$KIT_DIR.new"
mkdir -p "$KIT_DIR.new"
mv "$l2" "$l1" "$KIT_DIR.new/"
echo "$stamp" > "$KIT_DIR.new/stamp"
rm -rf "$KIT_DIR"
mv "$KIT_DIR.new" "$KIT_DIR"
kit_log "kit built in $KIT_DIR ($(du -sh "$KIT_DIR" | cut -f1))"
[ "${1:-}" = --print-dir ] && echo "$KIT_DIR"
exit 0
