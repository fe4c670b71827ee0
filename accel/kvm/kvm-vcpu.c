/*
 * vCPUs: creation, boot register state, the run loop and its exits, and
 * the stop-the-world pause (sysemu/kvm.h).
 *
 * Kicking a vCPU out of KVM_RUN: the controller sets a request flag and the
 * vCPU's kvm_run->immediate_exit under control_lock, then sends SIG_KICK to
 * the thread. Either the vCPU is inside KVM_RUN (the signal makes it return
 * EINTR) or it will enter it with immediate_exit set (it returns at once).
 * Only the vCPU clears immediate_exit, under control_lock, when it has
 * acted on the request, so no kick is ever lost.
 *
 * That also makes immediate_exit the vCPU's cheap "any request?" test: it
 * reads it without control_lock on every exit and takes the lock only when
 * it is set (or after the guest stopped), so vCPUs exiting at full rate
 * never meet on a VM-wide mutex. The flag is set even before the thread
 * runs, when there is nobody to signal yet.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>
#include "exec/memory.h"
#include "qemu/log.h"
#include "qemu/thread-naming.h"
#include "qemu/thread-sched.h"
#include "sysemu/runstate.h"
#include "sysemu/sandbox.h"
#include "kvm-internal.h"

#define SIG_KICK SIGUSR1
#define MSR_IA32_MISC_ENABLE    0x1a0
#define MISC_ENABLE_FAST_STRING (1ULL << 0)
#define MAX_VCPUS 255

/* Aligned to a cache line: each vCPU writes its exit counts on every
 * exit, and no other vCPU's fields may share that line. */
typedef struct VCPU {
    _Alignas(64) unsigned index;
    uint32_t apic_id;
    int fd;
    struct kvm_run *run;
    struct kvm_cpuid2 *cpuid;
    pthread_t thread;
    bool thread_running;        /* guarded by control_lock */
    bool pause_requested;       /* guarded by control_lock */
    bool stop_requested;        /* guarded by control_lock */
    bool paused;                /* guarded by control_lock */
    /* The thread's id (query-cpus-fast), 0 until the thread has started;
     * guarded by control_lock. */
    int thread_id;
    /* The guest cannot go on (it shut down, or KVM failed) until the
     * machine is reset; guarded by control_lock, cleared on resume. */
    bool halted;
    /* Written by the vCPU's own thread only; read by it, or by others
     * once it is joined. */
    KVMExitCounts exits;
} VCPU;

static VCPU vcpus[MAX_VCPUS];
static unsigned nvcpus;
static CpuConfig vcpu_cpu_config;
static CpuTopology vcpu_topology;

static pthread_mutex_t control_lock = PTHREAD_MUTEX_INITIALIZER;
/* The VCPU whose thread this is, NULL on any other thread. */
static _Thread_local VCPU *current_vcpu;
static pthread_cond_t control_cond = PTHREAD_COND_INITIALIZER;

static void kick_signal_handler(int sig)
{
    /* Nothing to do: delivery alone makes KVM_RUN return EINTR. */
}

static bool vcpu_create(VCPU *cpu, struct kvm_cpuid2 *supported, Error **errp)
{
    cpu->fd = ioctl(kvm_state.vm_fd, KVM_CREATE_VCPU, (unsigned long)cpu->apic_id);
    if (cpu->fd < 0) {
        error_setg_errno(errp, errno, "KVM_CREATE_VCPU %u", cpu->index);
        return false;
    }
    void *run = mmap(NULL, kvm_state.run_size, PROT_READ | PROT_WRITE, MAP_SHARED, cpu->fd, 0);
    if (run == MAP_FAILED) {
        error_setg_errno(errp, errno, "mmap of vCPU %u's kvm_run", cpu->index);
        return false;
    }
    cpu->run = run;
    if (!cpu->cpuid) {
        cpu->cpuid = cpuid_build(supported, &vcpu_cpu_config, &vcpu_topology, cpu->index, errp);
        if (!cpu->cpuid) {
            return false;
        }
    }
    if (ioctl(cpu->fd, KVM_SET_CPUID2, cpu->cpuid) < 0) {
        error_setg_errno(errp, errno, "KVM_SET_CPUID2 on vCPU %u", cpu->index);
        return false;
    }
    /* IA32_MISC_ENABLE with fast string operations on, as firmware leaves
     * it (and as QEMU sets it): Linux uses it to pick its memcpy. */
    g_autofree struct kvm_msrs *msrs =
        g_malloc0(sizeof(*msrs) + sizeof(struct kvm_msr_entry));
    msrs->nmsrs = 1;
    msrs->entries[0] = (struct kvm_msr_entry) {
        .index = MSR_IA32_MISC_ENABLE, .data = MISC_ENABLE_FAST_STRING,
    };
    if (ioctl(cpu->fd, KVM_SET_MSRS, msrs) != 1) {
        error_setg_errno(errp, errno, "KVM_SET_MSRS on vCPU %u", cpu->index);
        return false;
    }
    /* x87 and SSE control words as after RESET (SDM vol. 1, 8.1 and 10.2). */
    struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
    if (ioctl(cpu->fd, KVM_SET_FPU, &fpu) < 0) {
        error_setg_errno(errp, errno, "KVM_SET_FPU on vCPU %u", cpu->index);
        return false;
    }
    return true;
}

static struct kvm_cpuid2 *kvm_supported_cpuid(Error **errp)
{
    for (unsigned n = 64; n <= 4096; n *= 2) {
        struct kvm_cpuid2 *table =
            g_malloc0(sizeof(*table) + n * sizeof(struct kvm_cpuid_entry2));
        table->nent = n;
        if (ioctl(kvm_state.kvm_fd, KVM_GET_SUPPORTED_CPUID, table) == 0) {
            return table;
        }
        g_free(table);
        if (errno != E2BIG) {
            break;
        }
    }
    error_setg_errno(errp, errno, "KVM_GET_SUPPORTED_CPUID");
    return NULL;
}

static bool vcpus_create_all(Error **errp)
{
    struct kvm_cpuid2 *supported = kvm_supported_cpuid(errp);
    if (!supported) {
        return false;
    }
    bool ok = true;
    for (unsigned i = 0; i < nvcpus && ok; i++) {
        ok = vcpu_create(&vcpus[i], supported, errp);
    }
    g_free(supported);
    /* The coalesced ring is the VM's; any vCPU's fd maps it. */
    return ok && kvm_coalesced_ring_map(vcpus[0].fd, errp);
}

bool kvm_create_vcpus(unsigned ncpus, const CpuConfig *cpu, const CpuTopology *topo,
                      Error **errp)
{
    if (ncpus == 0 || ncpus > MAX_VCPUS) {
        error_setg(errp, "-smp: %u CPUs requested, this VMM supports 1 to %d", ncpus, MAX_VCPUS);
        return false;
    }
    int max = ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
    if (max > 0 && ncpus > (unsigned)max) {
        error_setg(errp, "-smp: %u CPUs requested, KVM on this host supports %d", ncpus, max);
        return false;
    }
    vcpu_cpu_config = *cpu;
    vcpu_topology = *topo;
    nvcpus = ncpus;
    for (unsigned i = 0; i < ncpus; i++) {
        vcpus[i] = (VCPU) { .index = i, .apic_id = cpuid_apic_id(topo, i), .fd = -1 };
    }
    struct sigaction sa = { .sa_handler = kick_signal_handler };
    sigaction(SIG_KICK, &sa, NULL);
    return vcpus_create_all(errp);
}

bool kvm_recreate_vcpus(Error **errp)
{
    return vcpus_create_all(errp);
}

/* Between this and a successful re-creation a vCPU has no kvm_run page
 * (run is NULL): a re-creation that fails leaves the VMM to exit with the
 * vCPUs in that state. The vCPU threads are paused meanwhile. */
void kvm_destroy_vcpus(void)
{
    kvm_coalesced_ring_unmap();
    for (unsigned i = 0; i < nvcpus; i++) {
        if (vcpus[i].run) {
            munmap(vcpus[i].run, kvm_state.run_size);
            vcpus[i].run = NULL;
        }
        if (vcpus[i].fd >= 0) {
            close(vcpus[i].fd);
            vcpus[i].fd = -1;
        }
    }
}

unsigned kvm_vcpu_count(void)
{
    return nvcpus;
}

uint32_t kvm_vcpu_apic_id(unsigned index)
{
    return vcpus[index].apic_id;
}

void kvm_cpu_signature(uint32_t *eax, uint32_t *edx)
{
    *eax = *edx = 0;
    const struct kvm_cpuid2 *table = vcpus[0].cpuid;
    for (unsigned i = 0; i < table->nent; i++) {
        if (table->entries[i].function == 1) {
            *eax = table->entries[i].eax;
            *edx = table->entries[i].edx;
        }
    }
}

/* ---- boot register state ---- */

static struct kvm_segment flat_segment(uint16_t selector, bool code, bool long_mode)
{
    return (struct kvm_segment) {
        .base = 0, .limit = 0xffffffff, .selector = selector,
        .type = code ? 0xb : 0x3,           /* execute/read or read/write, accessed */
        .present = 1, .dpl = 0, .s = 1, .g = 1,
        .db = !(code && long_mode), .l = code && long_mode,
    };
}

/* A real-mode segment as after INIT: base = selector * 16, 64 KiB limit. */
static struct kvm_segment real_mode_segment(uint16_t selector, bool code)
{
    return (struct kvm_segment) {
        .base = (uint64_t)selector << 4, .limit = 0xffff, .selector = selector,
        .type = code ? 0xb : 0x3, .present = 1, .s = 1,
    };
}

static void boot_state_to_sregs(const BootCpuState *boot, struct kvm_sregs *sregs)
{
    bool long_mode = boot->mode == BOOT_CPU_LONG64;
    if (boot->mode == BOOT_CPU_REAL16) {
        sregs->cs = real_mode_segment(boot->code_selector, true);
        sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss =
            real_mode_segment(boot->data_selector, false);
    } else {
        sregs->cs = flat_segment(boot->code_selector, true, long_mode);
        sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss =
            flat_segment(boot->data_selector, false, long_mode);
    }
    /* VMX entry insists on a usable TR even if the guest never uses it. */
    sregs->tr = (struct kvm_segment) { .limit = 0xffff, .type = 0xb, .present = 1 };
    sregs->ldt = (struct kvm_segment) { .type = 0x2, .present = 1, .limit = 0xffff, .unusable = 1 };
    sregs->gdt.base = boot->gdt_base;
    sregs->gdt.limit = boot->gdt_limit;
    sregs->idt.base = 0;
    sregs->idt.limit = boot->mode == BOOT_CPU_REAL16 ? 0x3ff : 0;
    sregs->cr3 = 0;
    sregs->cr4 = 0;
    sregs->efer = 0;
    switch (boot->mode) {
    case BOOT_CPU_REAL16:
        sregs->cr0 = 0x10;          /* ET */
        break;
    case BOOT_CPU_PROTECTED32:
        sregs->cr0 = 0x11;          /* ET PE */
        break;
    case BOOT_CPU_LONG64:
        sregs->cr0 = 0x80050033;    /* PG WP NE ET MP PE */
        sregs->cr3 = boot->cr3;
        sregs->cr4 = 0x20;          /* PAE */
        sregs->efer = 0x500;        /* LMA LME */
        break;
    }
}

bool kvm_set_boot_state(const BootCpuState *boot, Error **errp)
{
    VCPU *cpu = &vcpus[0];
    struct kvm_sregs sregs;
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0) {
        error_setg_errno(errp, errno, "KVM_GET_SREGS");
        return false;
    }
    boot_state_to_sregs(boot, &sregs);
    struct kvm_regs regs = {
        .rip = boot->rip, .rax = boot->rax, .rbx = boot->rbx, .rsi = boot->rsi,
        .rsp = boot->rsp, .rflags = 0x2,
    };
    if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0 || ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0) {
        error_setg_errno(errp, errno, "setting the boot CPU's registers");
        return false;
    }
    return true;
}

/* ---- exits ---- */

static void vcpu_handle_io(VCPU *cpu)
{
    struct kvm_run *run = cpu->run;
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    /* A string instruction (rep ins/outs) arrives as one exit with a count
     * of elements, all at the same port: one lookup, one device lock. */
    address_space_rw_repeated(address_space_io, run->io.port, data, run->io.size,
                              run->io.count, run->io.direction == KVM_EXIT_IO_OUT);
}

static void vcpu_handle_mmio(VCPU *cpu)
{
    struct kvm_run *run = cpu->run;
    if (run->mmio.is_write) {
        address_space_write(address_space_memory, run->mmio.phys_addr, run->mmio.data,
                            run->mmio.len);
    } else {
        address_space_read(address_space_memory, run->mmio.phys_addr, run->mmio.data,
                           run->mmio.len);
    }
}

static void vcpu_dump_state(VCPU *cpu)
{
    struct kvm_regs r;
    struct kvm_sregs s;
    if (ioctl(cpu->fd, KVM_GET_REGS, &r) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &s) < 0) {
        return;
    }
    fprintf(stderr,
            "vCPU %u: RIP=%016llx RFL=%08llx RSP=%016llx\n"
            "  RAX=%016llx RBX=%016llx RCX=%016llx RDX=%016llx\n"
            "  RSI=%016llx RDI=%016llx RBP=%016llx\n"
            "  CS=%04x (base %llx, l=%u db=%u) CR0=%llx CR3=%llx CR4=%llx EFER=%llx\n",
            cpu->index, r.rip, r.rflags, r.rsp, r.rax, r.rbx, r.rcx, r.rdx,
            r.rsi, r.rdi, r.rbp, s.cs.selector, s.cs.base, s.cs.l, s.cs.db,
            s.cr0, s.cr3, s.cr4, s.efer);
}

static void vcpu_report_internal_error(VCPU *cpu)
{
    struct kvm_run *run = cpu->run;
    error_report("KVM internal error on vCPU %u, suberror %u%s", cpu->index,
                 run->internal.suberror,
                 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION ? " (emulation failure)" : "");
    vcpu_dump_state(cpu);
    if (g_file_test("/sys/module/kvm_pvm", G_FILE_TEST_EXISTS)) {
        error_report("this host's /dev/kvm is kvm_pvm, a software hypervisor that cannot "
                     "emulate every instruction a stock Linux kernel uses; run Linux guests "
                     "on hardware KVM or on the nested bench (scripts/boot-guest.sh)");
    }
}

/* Handle one exit; false when the vCPU must stop running the guest (the
 * machine is shutting down or resetting). */
static bool vcpu_handle_exit(VCPU *cpu)
{
    struct kvm_run *run = cpu->run;
    /* Writes KVM held back come before whatever made this exit. */
    memory_coalesced_drain();
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        cpu->exits.io++;
        vcpu_handle_io(cpu);
        return true;
    case KVM_EXIT_MMIO:
        cpu->exits.mmio++;
        vcpu_handle_mmio(cpu);
        return true;
    case KVM_EXIT_INTR:
    case KVM_EXIT_HLT:          /* the in-kernel LAPIC handles HLT; harmless */
        cpu->exits.other++;
        return true;
    case KVM_EXIT_SHUTDOWN:     /* triple fault: a PC resets */
        if (qemu_loglevel_mask(LOG_GUEST_ERROR)) {
            qemu_log_mask(LOG_GUEST_ERROR, "vCPU %u: triple fault, resetting the machine\n",
                          cpu->index);
            vcpu_dump_state(cpu);
        }
        qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
        return false;
    case KVM_EXIT_SYSTEM_EVENT:
        switch (run->system_event.type) {
        case KVM_SYSTEM_EVENT_RESET:
            qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
            break;
        case KVM_SYSTEM_EVENT_CRASH:
            /* QEMU's default panic action: a shutdown, status 0. */
            error_report("vCPU %u: guest crashed", cpu->index);
            qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_PANIC);
            break;
        default:
            qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_SHUTDOWN);
        }
        return false;
    case KVM_EXIT_INTERNAL_ERROR:
        vcpu_report_internal_error(cpu);
        qemu_system_exit_request(1);
        return false;
    case KVM_EXIT_FAIL_ENTRY:
        error_report("vCPU %u: VM entry failed, hardware reason 0x%llx", cpu->index,
                     (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
        vcpu_dump_state(cpu);
        qemu_system_exit_request(1);
        return false;
    default:
        error_report("vCPU %u: unexpected KVM exit reason %u", cpu->index, run->exit_reason);
        vcpu_dump_state(cpu);
        qemu_system_exit_request(1);
        return false;
    }
}

/* Act on pause/stop requests; returns false when the thread must end. A
 * halted vCPU (take_lock) waits here until a reset resumes it or it is
 * stopped. */
static bool vcpu_check_requests(VCPU *cpu, bool take_lock)
{
    if (!take_lock && !__atomic_load_n(&cpu->run->immediate_exit, __ATOMIC_ACQUIRE)) {
        return true;
    }
    pthread_mutex_lock(&control_lock);
    while (!cpu->stop_requested && (cpu->pause_requested || cpu->halted)) {
        cpu->paused = true;
        pthread_cond_broadcast(&control_cond);
        pthread_cond_wait(&control_cond, &control_lock);
    }
    cpu->paused = false;
    bool keep_running = !cpu->stop_requested && cpu->run;
    if (cpu->run) {
        __atomic_store_n(&cpu->run->immediate_exit, 0, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&control_lock);
    return keep_running;
}

static void *vcpu_thread(void *opaque)
{
    VCPU *cpu = opaque;
    current_vcpu = cpu;
    thread_sched_vcpu_init();
    pthread_mutex_lock(&control_lock);
    cpu->thread_id = gettid();
    pthread_cond_broadcast(&control_cond);
    pthread_mutex_unlock(&control_lock);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, SIG_KICK);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    Error *err = NULL;
    if (!sandbox_enter_vcpu_thread(cpu->index, &err)) {
        /* Never run guest code unconfined. */
        error_report_err(err);
        qemu_system_exit_request(1);
        return NULL;
    }

    /* The first check takes the lock: requests may predate the thread. */
    bool can_go_on = false;
    while (vcpu_check_requests(cpu, !can_go_on)) {
        if (ioctl(cpu->fd, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            error_report("vCPU %u: KVM_RUN: %s", cpu->index, strerror(errno));
            qemu_system_exit_request(1);
            can_go_on = false;
        } else {
            can_go_on = vcpu_handle_exit(cpu);
        }
        if (!can_go_on) {
            pthread_mutex_lock(&control_lock);
            cpu->halted = true;
            pthread_mutex_unlock(&control_lock);
        }
    }
    return NULL;
}

typedef enum VCPURequest {
    VCPU_REQUEST_PAUSE,
    VCPU_REQUEST_RESUME,
    VCPU_REQUEST_STOP,          /* dominates: a stopping vCPU never pauses */
} VCPURequest;

/* Post a request to every vCPU and kick it out of KVM_RUN. */
static void vcpus_request(VCPURequest request)
{
    pthread_mutex_lock(&control_lock);
    for (unsigned i = 0; i < nvcpus; i++) {
        VCPU *cpu = &vcpus[i];
        if (request == VCPU_REQUEST_RESUME) {
            cpu->pause_requested = false;
            cpu->halted = false;
            continue;
        }
        if (request == VCPU_REQUEST_PAUSE) {
            cpu->pause_requested = true;
        } else {
            cpu->stop_requested = true;
        }
        if (cpu->run) {
            __atomic_store_n(&cpu->run->immediate_exit, 1, __ATOMIC_RELEASE);
        }
        if (cpu->thread_running) {
            pthread_kill(cpu->thread, SIG_KICK);
        }
    }
    pthread_cond_broadcast(&control_cond);
    pthread_mutex_unlock(&control_lock);
}

bool kvm_start_vcpus(Error **errp)
{
    /* vCPU threads unblock SIG_KICK themselves; everyone else keeps it
     * blocked so that a kick never lands on the wrong thread. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIG_KICK);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_mutex_lock(&control_lock);
    for (unsigned i = 0; i < nvcpus; i++) {
        /* Paused until the machine starts (vm_start), so that -S holds
         * them before their first instruction. */
        vcpus[i].pause_requested = true;
        vcpus[i].stop_requested = vcpus[i].halted = false;
    }
    pthread_mutex_unlock(&control_lock);
    for (unsigned i = 0; i < nvcpus; i++) {
        int err = pthread_create(&vcpus[i].thread, NULL, vcpu_thread, &vcpus[i]);
        if (err) {
            error_setg_errno(errp, err, "creating the thread of vCPU %u", i);
            return false;
        }
        char name[16];
        g_snprintf(name, sizeof(name), "CPU %u/KVM", i);
        thread_set_debug_name(vcpus[i].thread, name);
        pthread_mutex_lock(&control_lock);
        vcpus[i].thread_running = true;
        pthread_mutex_unlock(&control_lock);
    }
    return true;
}

void kvm_request_pause_all(void)
{
    vcpus_request(VCPU_REQUEST_PAUSE);
}

void kvm_pause_all(void)
{
    vcpus_request(VCPU_REQUEST_PAUSE);
    pthread_mutex_lock(&control_lock);
    for (unsigned i = 0; i < nvcpus; i++) {
        while (vcpus[i].thread_running && !vcpus[i].paused && !vcpus[i].stop_requested) {
            pthread_cond_wait(&control_cond, &control_lock);
        }
    }
    pthread_mutex_unlock(&control_lock);
}

void kvm_resume_all(void)
{
    vcpus_request(VCPU_REQUEST_RESUME);
}

void kvm_stop_vcpus(void)
{
    vcpus_request(VCPU_REQUEST_STOP);
    for (unsigned i = 0; i < nvcpus; i++) {
        pthread_mutex_lock(&control_lock);
        bool running = vcpus[i].thread_running;
        vcpus[i].thread_running = false;
        pthread_mutex_unlock(&control_lock);
        if (running) {
            pthread_join(vcpus[i].thread, NULL);
        }
        if (qemu_loglevel_mask(LOG_EXITS)) {
            const KVMExitCounts *e = &vcpus[i].exits;
            fprintf(stderr, "vCPU %u exits to user space: io=%" PRIu64 " mmio=%" PRIu64
                    " other=%" PRIu64 "\n", i, e->io, e->mmio, e->other);
        }
    }
}

void kvm_vcpu_info(unsigned index, KVMVcpuInfo *info)
{
    VCPU *cpu = &vcpus[index];
    pthread_mutex_lock(&control_lock);
    /* A thread just created has not written its id yet. */
    while (cpu->thread_running && !cpu->thread_id) {
        pthread_cond_wait(&control_cond, &control_lock);
    }
    info->thread_id = cpu->thread_id;
    pthread_mutex_unlock(&control_lock);
    cpuid_topo_position(&vcpu_topology, index, &info->socket, &info->core, &info->thread);
}

bool kvm_vcpu_exit_counts(KVMExitCounts *counts)
{
    *counts = current_vcpu ? current_vcpu->exits : (KVMExitCounts) { 0 };
    return current_vcpu != NULL;
}
