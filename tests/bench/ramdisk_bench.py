"""What the bench's disk benchmarks share (virtio_blk_randread.py,
ide_lines.py): a brd RAM disk in L1 for the guest's drive, so that
`cache=none` is O_DIRECT on memory for every VMM, and the configurations
they alternate."""

REFERENCE = "/usr/bin/qemu-system-x86_64"
DISK_MB = 128
# Host shell text: /dev/ram0 of DISK_MB, zeroed.
BRD_SETUP = (f'grep -q " ram0$" /proc/partitions || '
             f'insmod "$(find /lib/modules -name brd.ko)" rd_nr=1 rd_size={DISK_MB * 1024}\n'
             f'dd if=/dev/zero of=/dev/ram0 bs=1M count={DISK_MB} 2>/dev/null\n')


def vmm_configs(options=""):
    """{name: (VMM shell word, -machine argument)}: ours in both lock modes
    and ours-on without io-sched-batch (what it buys, docs/design.md), with
    ",options" added, and Debian's QEMU (the batch's file "qemu")."""
    return {
        "ours-on": ('"$OURS"', f"-machine pc,device-lock=on{options}"),
        "ours-off": ('"$OURS"', f"-machine pc,device-lock=off{options}"),
        "ours-nobatch": ('"$OURS"', f"-machine pc,device-lock=on,io-sched-batch=off{options}"),
        "qemu": ('"$BENCH_FILES/qemu"', "-machine pc"),
    }
