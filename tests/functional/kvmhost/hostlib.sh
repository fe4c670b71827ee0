# Shell side of the bench harness: runs on the KVM host (the local machine,
# inside a network namespace of its own, or the nested L1 host), sourced by
# the batch runner and by every test fragment. POSIX sh: L1 has busybox.
#
# A batch is a directory of fragments, NAME.sh, each with NAME.env setting
# VMM (the binary under test) and LIMIT (seconds before the fragment is
# killed). bench_run_all runs them in name order and frames each one's
# output on stdout:
#   @@TEST-BEGIN NAME
#   ... fragment output, with guest consoles framed by @@GUEST-BEGIN/END ...
#   @@TEST-END NAME rc=N secs=S   (S: its run time, whole seconds)
# The Python side (kvmhost.py) parses this; keep the two in step.
#
# Inside a fragment: $VMM, $KIT (the L2 kit: bzImage, vmlinux, initrd.cpio),
# $WORK (a fresh scratch directory) and $BENCH_FILES (extra files the batch
# brought along) are set, and the functions below are available.
#
# Network rule: a guest's traffic goes only to its host, inside a network
# namespace the fragment creates (netns_create); every guest started after
# that runs in it, and so do the host's tools run through in_netns.

# uptime_s: whole seconds since L1 booted, without a fork. Deadlines are
# kept in it: counting "sleep 0.1" iterations runs slow when every fork of
# sleep takes long (a busy nested L1), and a limit then stretches without
# bound.
uptime_s() {
    read -r _up _ < /proc/uptime
    echo "${_up%.*}"
}

# wait_pid_for PID SECONDS: wait until PID ends or SECONDS have passed;
# succeeds if it ended.
wait_pid_for() {
    _deadline=$(($(uptime_s) + $2))
    while kill -0 "$1" 2>/dev/null; do
        [ "$(uptime_s)" -lt "$_deadline" ] || return 1
        sleep 0.1
    done
}

# guest_dump_threads PID: each thread of PID with its state, where it waits
# in the kernel and its kernel stack: the evidence when a guest is killed
# at its limit (a vCPU stuck in KVM_RUN, an I/O thread blocked on the host).
guest_dump_threads() {
    for _task in /proc/"$1"/task/*; do
        [ -d "$_task" ] || continue
        echo "bench: thread ${_task##*/} $(cat "$_task/comm" 2>/dev/null):" \
             "$(awk '/^State:/ { print $2, $3 }' "$_task/status" 2>/dev/null)" \
             "wchan=$(cat "$_task/wchan" 2>/dev/null)"
        sed 's/^/bench:   /' "$_task/stack" 2>/dev/null
    done
}

# guest_start NAME LIMIT ARGS...: start "$VMM ARGS..." in the background,
# console (stdout and stderr) to $WORK/NAME.log, killed with SIGKILL after
# LIMIT seconds (a hung VMM may ignore SIGTERM), its threads' kernel stacks
# appended to the log first. After netns_create the VMM runs inside the
# fragment's namespace ($NETNS): ip netns exec execs it, so the watched PID
# is the VMM's own.
guest_start() {
    _name=$1 _limit=$2; shift 2
    # A name may be reused: nothing of an earlier run may be mistaken for
    # this one's (its marker, its exit status).
    rm -f "$WORK/$_name".log "$WORK/$_name".rc "$WORK/$_name".killed "$WORK/$_name".pid
    : > "$WORK/$_name.log"
    (
        if [ -n "${NETNS:-}" ]; then
            "$(ip_path)" netns exec "$NETNS" "$VMM" "$@" < /dev/null > "$WORK/$_name.log" 2>&1 &
        else
            "$VMM" "$@" < /dev/null > "$WORK/$_name.log" 2>&1 &
        fi
        _pid=$!
        echo "$_pid" > "$WORK/$_name.pid"
        if ! wait_pid_for "$_pid" "$_limit"; then
            echo "bench: killed at its limit of $_limit s" >> "$WORK/$_name.log"
            guest_dump_threads "$_pid" >> "$WORK/$_name.log"
            kill -KILL "$_pid" 2>/dev/null
            echo timeout > "$WORK/$_name.killed"
        fi
        wait "$_pid"
        echo $? > "$WORK/$_name.rc"
    ) &
    echo $! > "$WORK/$_name.watcher"
}

# guest_wait NAME: wait for the guest to end, print its framed console log,
# return the VMM's exit status (137 when it was killed at its limit).
guest_wait() {
    wait "$(cat "$WORK/$1.watcher")" 2>/dev/null
    _rc=$(cat "$WORK/$1.rc" 2>/dev/null || echo 255)
    _killed=$(cat "$WORK/$1.killed" 2>/dev/null)
    echo "@@GUEST-BEGIN $1"
    tr -d '\r' < "$WORK/$1.log"
    echo
    echo "@@GUEST-END $1 rc=$_rc${_killed:+ killed=$_killed}"
    return "$_rc"
}

# guest_run NAME LIMIT ARGS...: guest_start then guest_wait.
guest_run() {
    guest_start "$@"
    guest_wait "$1"
}

# guest_wait_for NAME PATTERN SECONDS: wait until the guest's console shows
# PATTERN (a fixed string); fails if the guest ends or time runs out first.
guest_wait_for() {
    _deadline=$(($(uptime_s) + $3))
    while [ "$(uptime_s)" -lt "$_deadline" ]; do
        grep -qF "$2" "$WORK/$1.log" 2>/dev/null && return 0
        [ -f "$WORK/$1.rc" ] && break
        sleep 0.1
    done
    echo "bench: guest $1 did not print '$2'" >&2
    return 1
}

# guest_measure_boot NAME PATTERN LIMIT ARGS...: start the guest, wait for
# PATTERN on its console, then print
#   @@BOOT NAME ms=<time from start to PATTERN> rss_kib=<VMM's VmRSS then>
# and kill the guest. For benchmarks: time resolution is 10 ms.
guest_measure_boot() {
    _bname=$1 _pattern=$2 _blimit=$3; shift 3
    read -r _t0 _ < /proc/uptime
    guest_start "$_bname" "$_blimit" "$@"
    if guest_wait_for "$_bname" "$_pattern" "$_blimit"; then
        read -r _t1 _ < /proc/uptime
        _rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$(cat "$WORK/$_bname.pid")/status" 2>/dev/null)
        echo "@@BOOT $_bname ms=$(awk -v a="$_t0" -v b="$_t1" 'BEGIN { print int((b - a) * 1000) }') rss_kib=${_rss:-0}"
    fi
    kill -KILL "$(cat "$WORK/$_bname.pid")" 2>/dev/null
    guest_wait "$_bname" > /dev/null
}

# kit_cmd TEXT: the kernel parameter that makes the L2 kit's init run TEXT.
kit_cmd() {
    printf 'kit.cmd=%s' "$(printf '%s' "$1" | base64 | tr -d '\n')"
}

# iproute2's ip, by path: L1's busybox sh prefers its own applets to PATH,
# and busybox's ip cannot create tap devices or namespaces.
ip_path() {
    for _ip in /bin/ip /usr/bin/ip /sbin/ip /usr/sbin/ip; do
        [ -x "$_ip" ] && { echo "$_ip"; return; }
    done
    echo "bench: iproute2's ip is not installed" >&2
    echo false
}
ip() {
    "$(ip_path)" "$@"
}

# tap_create NAME ADDR/PREFIX [multi_queue]: a persistent tap device with
# the host-side address of a guest link (in $NETNS after netns_create);
# multi_queue for a VMM that opens it once per queue pair (queues=N).
tap_create() {
    in_netns ip tuntap add dev "$1" mode tap ${3:+"$3"} &&
        in_netns ip addr add "$2" dev "$1" &&
        in_netns ip link set "$1" up
}

# netns_create: a network namespace of this fragment's own, named in
# $NETNS, with only its loopback up. Guests started from here on run in
# it (guest_start), host tools go through in_netns, and the namespace,
# with its tap devices and every process still in it, goes when the
# fragment's shell exits (netns_remove; bench_run_all also removes it
# when the fragment was killed at its limit).
netns_create() {
    NETNS=bench-$(basename "$WORK")
    netns_remove "$NETNS"
    ip netns add "$NETNS" && ip netns exec "$NETNS" ip link set lo up || return 1
    echo "$NETNS" > "$WORK/.netns"
    trap 'netns_remove "$NETNS"' EXIT
}

# in_netns CMD...: CMD in the fragment's namespace (as it is before
# netns_create).
in_netns() {
    if [ -n "${NETNS:-}" ]; then
        "$(ip_path)" netns exec "$NETNS" "$@"
    else
        "$@"
    fi
}

# netns_remove NAME: kill what still runs in namespace NAME, then delete it.
netns_remove() {
    [ -e "/run/netns/$1" ] || [ -e "/var/run/netns/$1" ] || return 0
    for _p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$_p" 2>/dev/null; done
    ip netns del "$1" 2>/dev/null
}

# ram_disk N: /dev/ramN, zeroed: a 64 MiB RAM disk of brd, a host block
# device, where a drive needs O_DIRECT (which L1's tmpfs lacks before Linux
# 6.6). brd is loaded once per host, with four disks: every fragment that
# shares the host finds the same ones, whichever module loaded it.
ram_disk() {
    [ -b /dev/ram3 ] || insmod "$(grep '/brd\.ko$' /etc/modules.load 2>/dev/null)" \
        rd_nr=4 rd_size=65536 2>/dev/null || modprobe brd rd_nr=4 rd_size=65536
    [ -b "/dev/ram$1" ] || { echo "bench: brd gave no /dev/ram$1" >&2; return 1; }
    dd if=/dev/zero of="/dev/ram$1" bs=1M count=64 2>/dev/null
}

# bench_run_all DIR: run every fragment of the batch in DIR.
bench_run_all() {
    _lib=$(cd "$(dirname "$BENCH_HOSTLIB")" && pwd)/$(basename "$BENCH_HOSTLIB")
    for _frag in "$1"/*.sh; do
        [ -e "$_frag" ] || continue
        _test=$(basename "$_frag" .sh)
        WORK=${BENCH_WORK:-/tmp/bench}/$_test
        rm -rf "$WORK"; mkdir -p "$WORK"
        echo "@@TEST-BEGIN $_test"
        _start=$(uptime_s)
        (
            . "$1/$_test.env"
            export VMM KIT WORK BENCH_HOSTLIB="$_lib"
            # A fragment runs in its own session so that everything it
            # started can be killed at its limit.
            setsid sh -c '. "$BENCH_HOSTLIB"; . "$1"' sh "$_frag" 2>&1 &
            _pid=$!
            if ! wait_pid_for "$_pid" "$LIMIT"; then
                echo "bench: test $_test exceeded its ${LIMIT}s limit" >&2
                kill -KILL -- "-$_pid" 2>/dev/null
            fi
            wait "$_pid"
            _rc=$?
            # A fragment killed at its limit could not remove its namespace.
            [ ! -f "$WORK/.netns" ] || netns_remove "$(cat "$WORK/.netns")"
            echo "@@TEST-END $_test rc=$_rc secs=$(($(uptime_s) - _start))"
        )
        # Its images and logs are in the output or done with; in L1 they
        # would hold RAM for the rest of a batch the whole session shares.
        rm -rf "$WORK"
    done
}
