"""The PC platform as Debian's Linux sees it under our VMM, on a KVM host
(hardware or the nested bench): the PCI bus and its functions, ACPI tables,
power-off, the PM timer as clocksource, fw_cfg, our PCI test device driven
from guest user space (registers, INTx, MSI, MSI-X, DMA, a moved BAR, the
doorbell on an ioeventfd and the coalesced array),
acpi=off with the MP table, a reset through port 0xcf9, and S3 suspend
woken by the RTC alarm."""

import re

import pytest

from kvmhost import Fragment, expect_guest, l2_args

# pdl-pcitest sends MSI on vector 0xd1, MSI-X on 0xd2 and the MSI-X vector
# on irqfd on 0xd3, vectors a small guest leaves unused, so the kernel logs
# each arrival.
MSI_VECTORS = {"msi": 0xd1, "msix": 0xd2, "msix-irqfd": 0xd3}
PM_INTERVAL_S = 30          # guest sleep timed by the host, acpi_pm clocksource
FW_CFG_TEXT = "hello-from-fw-cfg"

PLATFORM_REPORT = (
    "lspci -n; echo cpus=$(nproc); ls /sys/bus/acpi/devices | grep LNXPWRBN; "
    "cat /sys/firmware/qemu_fw_cfg/by_name/opt/pdl/greeting/raw; echo; "
    # The program's report goes through a file: the kernel's console line
    # about each MSI it receives would otherwise land inside the report's
    # lines, even inside a check's name.
    "pdl-pcitest all > /tmp/pcitest.out; echo pcitest=$?; cat /tmp/pcitest.out; "
    "dmesg | grep -E 'ACPI|smpboot|irq handler for vector'; exit 0")

# /dev/port offset 0xcf9 = 3321; 6 = reset CPU | system reset. CMOS byte
# 0x40 tells the second boot from the first (see test_linux_guests.py).
CF9_RESET_TWICE = (
    "cmos_index() { printf '\\100' | dd of=/dev/port bs=1 seek=112 count=1 conv=notrunc 2>/dev/null; }; "
    "cmos_index; mark=$(dd if=/dev/port bs=1 skip=113 count=1 2>/dev/null | od -An -tx1 | tr -d ' '); "
    "if [ \"$mark\" = 5a ]; then echo second-boot; exit 0; fi; "
    "cmos_index; printf Z | dd of=/dev/port bs=1 seek=113 count=1 conv=notrunc 2>/dev/null; "
    "echo first-boot; sync; printf '\\006' | dd of=/dev/port bs=1 seek=3321 count=1 conv=notrunc; "
    "sleep 5; echo cf9-ignored")

# rtcwake's two steps, by hand (busybox-static has no rtcwake).
SUSPEND_AND_WAKE = (
    "echo 0 > /sys/class/rtc/rtc0/wakealarm; echo +5 > /sys/class/rtc/rtc0/wakealarm; "
    "echo suspending; echo mem > /sys/power/state; echo resume-status=$?; "
    "echo cpus=$(nproc); dmesg | grep -E 'PM: suspend|ACPI: PM: .*S3'; exit 0")


def linux(name, vmm, command, *, smp=2, extra=(), append="", limit=240, exit_port=True,
          no_reboot=True):
    args = l2_args(command, smp=smp, extra=list(extra), append=append, exit_port=exit_port,
                   no_reboot=no_reboot)
    return Fragment(name, f"guest_run boot {limit} {args}", vmm, limit=limit + 30)


def timed_pm_clock(vmm):
    """The host clock's view of a guest sleep timed by the acpi_pm clocksource."""
    command = ("cat /sys/devices/system/clocksource/clocksource0/current_clocksource; "
               f"echo PM-SLEEP-BEGIN; sleep {PM_INTERVAL_S}; echo PM-SLEEP-END; exit 0")
    args = l2_args(command, smp=1, append="clocksource=acpi_pm")
    script = "\n".join([
        f"guest_start boot 300 {args}",
        "guest_wait_for boot PM-SLEEP-BEGIN 240 && read -r t0 _ < /proc/uptime",
        f"guest_wait_for boot PM-SLEEP-END {PM_INTERVAL_S * 2} && read -r t1 _ < /proc/uptime",
        'echo "@@PM-SLEEP host_ms=$(awk -v a="$t0" -v b="$t1" \'BEGIN { print int((b - a) * 1000) }\')"',
        "guest_wait boot",
    ])
    return Fragment("acpi_pm_clock", script, vmm, limit=330)


def bench_batch(session):
    our_vmm = session.our_vmm
    frags = [
        linux("platform", our_vmm, PLATFORM_REPORT,
              extra=["-device pdl-testdev",
                     f"-fw_cfg name=opt/pdl/greeting,string={FW_CFG_TEXT}"]),
        linux("poweroff", our_vmm, "exit 0", smp=1, exit_port=False),
        linux("acpi_off", our_vmm, "lspci -n; echo cpus=$(nproc); pdl-pcitest intx; "
              "echo pcitest=$?; dmesg | grep -E 'ACPI|MP-table|smpboot'; exit 0",
              extra=["-machine pc,acpi=off", "-device pdl-testdev,addr=5.0"],
              append="kit.halt=reboot"),
        linux("cf9_reset", our_vmm, CF9_RESET_TWICE, smp=1, no_reboot=False, limit=300),
        linux("suspend", our_vmm, SUSPEND_AND_WAKE, limit=300),
        timed_pm_clock(our_vmm),
    ]
    return frags, {}


def platform_guest(runs):
    return expect_guest(runs["platform"], "boot", exit_status=0, vmm_status=1)


def test_lspci_lists_host_bridge_isa_bridge_ide_pm_and_test_device(runs):
    log = platform_guest(runs).log
    # 00:01.1 is the PIIX3's IDE function, there with or without drives;
    # 00:01.3 the PIIX4 power management function, as on QEMU's pc.
    for line in (r"^00:00\.0 0600: 8086:1237", r"^00:01\.0 0601: 8086:7000",
                 r"^00:01\.1 0101: 8086:7010", r"^00:01\.3 0680: 8086:7113",
                 r"^00:0[2-9a-f]\.0 ff00: 7e57:0001"):
        assert re.search(line, log, re.M), f"{line} missing:\n{log}"


def test_pm_function_claims_the_acpi_ports_and_the_power_button_is_found(runs):
    """Linux's PIIX4 quirk reads PMBA of 00:01.3 and claims the PM I/O
    space the FADT points into; ACPI finds the fixed-hardware power button
    (its status and enable bits are in that space). The kit's kernel has
    no button driver loaded, so a press is not tried here."""
    log = platform_guest(runs).log
    assert re.search(r"00:01\.3: quirk: \[io\s+0x0600-0x063f\] claimed by PIIX4 ACPI", log), log
    assert re.search(r"^LNXPWRBN:00$", log, re.M), log


def test_acpi_tables_parsed_without_errors(runs):
    log = platform_guest(runs).log
    for table in ("RSDP", "XSDT", "FACP", "DSDT", "FACS", "APIC"):
        assert re.search(rf"ACPI: {table} 0x", log), f"no {table} in the kernel log:\n{log}"
    assert "ACPI: Interpreter enabled" in log, log
    assert not re.search(r"ACPI (BIOS )?(Error|Exception|Warning)", log), log


def test_smp2_cpus_come_from_acpi(runs):
    log = platform_guest(runs).log
    assert re.search(r"^cpus=2$", log, re.M), log
    assert "Using ACPI (MADT) for SMP configuration information" in log, log
    assert re.search(r"smpboot: Allowing 2 CPUs, 0 hotplug CPUs", log), log


def test_fw_cfg_item_reaches_guest_sysfs(runs):
    assert re.search(rf"^{FW_CFG_TEXT}$", platform_guest(runs).log, re.M)


@pytest.mark.parametrize("check", [
    "mmio-id", "mmio-scratch", "mmio-accesses", "io-id", "io-scratch", "io-accesses",
    "dma-fill", "dma-sum", "dma-needs-master", "intx-1", "intx-2", "msi-sent", "msix-sent",
    "msix-irqfd-in-kernel", "msix-irqfd-sent", "msix-irqfd-masked-pending",
    "msix-irqfd-unmask-delivers", "bar-move-new", "bar-move-old"])
def test_pci_test_device_from_guest(runs, check):
    log = platform_guest(runs).log
    assert re.search(rf"^PASS {check}(?![\w-])", log, re.M), log
    assert re.search(r"^SUMMARY 0 check\(s\) failed$", log, re.M), log


@pytest.mark.parametrize("check", [
    "doorbell-mmio-counted", "doorbell-mmio-no-exits", "doorbell-pio-counted",
    "doorbell-pio-no-exits", "coalesced-mmio-in-order", "coalesced-mmio-few-exits",
    "coalesced-mmio-after-clear", "coalesced-pio-in-order", "coalesced-pio-few-exits",
    "coalesced-pio-after-clear"])
def test_fast_paths_from_guest(runs, check):
    """pdl-testdev's doorbell rings stay in KVM (the device counts them, the
    vCPU makes no exit for them) and its coalesced array applies a burst in
    order; a KVM without the capability is a skip that names it."""
    log = platform_guest(runs).log
    feature = re.match(r"(doorbell|coalesced-mmio|coalesced-pio)", check).group(1)
    missing = re.search(rf"^SKIP {feature}: no (\S+)$", log, re.M)
    if missing:
        pytest.skip(f"the bench's KVM lacks {missing.group(1)}")
    assert re.search(rf"^PASS {check}(?![\w-])", log, re.M), log


@pytest.mark.parametrize("kind", MSI_VECTORS)
def test_msi_reaches_guest_cpu_with_programmed_vector(runs, kind):
    log = platform_guest(runs).log
    # x86 logs "<cpu>.<vector>" in decimal: the vector the guest wrote into
    # the message data, delivered to APIC 0.
    assert re.search(rf"\b0\.{MSI_VECTORS[kind]} No irq handler for vector", log), log


def test_msix_irqfd_vector_arrives_once_unmasked_and_once_on_unmask(runs):
    """Raised by our main loop through KVM's irqfd: one arrival unmasked,
    none while masked (it waits in the PBA), one when unmasked."""
    log = platform_guest(runs).log
    vector = MSI_VECTORS["msix-irqfd"]
    # Each kernel line shows twice (console, then dmesg): count timestamps.
    arrivals = set(re.findall(rf"^\[\s*(\d+\.\d+)\] __common_interrupt: 0\.{vector} No irq "
                              r"handler for vector", log, re.M))
    assert len(arrivals) == 2, log


def test_poweroff_exits_vmm_with_status_zero(runs):
    guest = expect_guest(runs["poweroff"], "boot", exit_status=0, vmm_status=0)
    assert "reboot: Power down" in guest.log, guest.log


def test_acpi_off_keeps_mp_table_and_pci_interrupts(runs):
    log = expect_guest(runs["acpi_off"], "boot", exit_status=0, vmm_status=1,
                       contains=["^cpus=2$", "^PASS intx-1$", r"^00:05\.0 ff00: 7e57:0001"]).log
    assert not re.search(r"ACPI: (RSDP|DSDT) 0x", log), log
    # No ACPI, no PM function: as on QEMU.
    assert not re.search(r"^00:01\.3 ", log, re.M), log


def test_port_cf9_resets_the_machine(runs):
    guest = expect_guest(runs["cf9_reset"], "boot", exit_status=0, vmm_status=1,
                         contains=["^first-boot$", "^second-boot$"])
    assert "cf9-ignored" not in guest.log, guest.log


def test_s3_suspend_is_woken_by_rtc_alarm(runs):
    log = expect_guest(runs["suspend"], "boot", exit_status=0, vmm_status=1,
                       contains=["^suspending$", "^resume-status=0$", "^cpus=2$"]).log
    for step in ("PM: suspend entry (deep)", "ACPI: PM: Preparing to enter system sleep state S3",
                 "ACPI: PM: Waking up from system sleep state S3", "PM: suspend exit"):
        assert step in log, log
    # Resumed, not rebooted: one boot only.
    assert log.count("KIT-READY") == 1, log


def test_acpi_pm_clocksource_keeps_host_time(runs):
    outcome = runs["acpi_pm_clock"]
    log = expect_guest(outcome, "boot", exit_status=0, vmm_status=1,
                       contains=["^acpi_pm$", "^PM-SLEEP-END$"]).log
    host_ms = int(re.search(r"@@PM-SLEEP host_ms=(\d+)", outcome.output).group(1))
    # 1% of the interval, plus the 100 ms the host polls the console with.
    assert abs(host_ms - PM_INTERVAL_S * 1000) <= PM_INTERVAL_S * 10 + 100, (host_ms, log)
