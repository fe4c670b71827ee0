#!/usr/bin/env bash
# Boot the default L2 guest (the kit's Debian kernel and busybox initramfs)
# to a shell on this terminal.
#
#   scripts/boot-guest.sh [--vmm PATH] [--smp N] [-- EXTRA VMM ARGS]
#
# The VMM is ours (build/qemu-system-x86_64) unless --vmm or $VMM names
# another, e.g. /usr/bin/qemu-system-x86_64 for the reference.
# On a host with hardware KVM the VMM runs here; elsewhere (kvm_pvm cannot
# boot Linux) it runs inside the nested bench host L1, whose console is this
# terminal. Leave the guest with `exit` or `reboot` (the guest reboots into
# -no-reboot's exit), or the VMM's Ctrl-a x; in L1 the outer QEMU's escape
# is Ctrl-b, so Ctrl-b x ends everything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vmm=${VMM:-$here/../build/qemu-system-x86_64} smp=2
while [ $# -gt 0 ]; do
    case "$1" in
    --vmm) vmm=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "boot-guest: unknown option $1" >&2; exit 1 ;;
    esac
done
[ -x "$vmm" ] || { echo "boot-guest: VMM $vmm is not an executable (run make?)" >&2; exit 1; }
kit=$("$here/build-guest-kit.sh" --print-dir)

# No ACPI yet in our VMM, so the guest leaves through a reboot, which
# -no-reboot turns into an exit.
guest_args="-accel kvm -m 512M -smp $smp -nographic -no-reboot"
append="console=ttyS0 kit.halt=reboot"
mode=$(python3 -c "import sys; sys.path.insert(0, '$here/../tests/functional'); import kvmhost; print(kvmhost.host_mode())")
if [ "$mode" = direct ]; then
    exec "$vmm" $guest_args -kernel "$kit/l2/bzImage" -initrd "$kit/l2/initrd.cpio" \
        -append "$append" "$@"
fi
echo "boot-guest: no hardware KVM here; booting the guest inside the nested L1 host" >&2
script=$(mktemp)
trap 'rm -f "$script"' EXIT
printf 'exec /bench/bin/vmm %s -kernel /kit/bzImage -initrd /kit/initrd.cpio -append "%s" %s\n' \
    "$guest_args" "$append" "$*" > "$script"
"$here/run-in-l1.sh" --vmm "vmm=$vmm" --run "$script"
