# Shared helpers for the guest-kit builders (sourced, not executed).
#
# Everything that ends up in a kit comes from Debian packages: they are
# fetched with `apt-get download` into a cache, unpacked with `dpkg-deb -x`
# into a private sysroot, and only the files a kit needs are copied out of it.
# Nothing is taken from the build host's own /usr, so the kit is the same on
# any Debian 12 machine.

set -euo pipefail

KIT_KERNEL_PKG=${KIT_KERNEL_PKG:-linux-image-amd64}
KIT_CACHE=${KIT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/cache}/.cache}/vmm-kit}
KIT_DEBS=$KIT_CACHE/debs

kit_log() { printf '[kit] %s\n' "$*" >&2; }
kit_die() { printf '[kit] error: %s\n' "$*" >&2; exit 1; }

# The concrete kernel package behind the linux-image-amd64 meta package.
kit_kernel_package() {
    apt-cache depends "$KIT_KERNEL_PKG" 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}

# Every package needed to run the named packages' programs: the Depends
# closure, minus the packages that only matter to a full system (maintainer
# scripts, interpreters, init integration) and never provide a shared library
# that a binary links against.
kit_closure() {
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
        --no-breaks --no-replaces --no-enhances "$@" 2>/dev/null |
        awk '/^[a-z0-9]/ { print $1 }' |
        grep -vE '^(debconf|cdebconf|adduser|init-system-helpers|python3.*|perl.*|dpkg|install-info|lsb-base|sysvinit-utils|systemd.*|libpam.*|passwd|login|ucf|sensible-utils|tzdata|base-files|readline-common|media-types|mime-support|dbus.*)$' |
        sort -u
}

# Download the packages (once: the cache keeps the .deb files) and unpack
# them into the sysroot $1.
# A scratch directory $TMPDIR/PREFIX.XXXXXX that is removed at exit, and
# also if this script dies by SIGKILL (a harness giving up on a hung L1, a
# job killed at its limit), where no trap runs: the directory records its
# owner's pid, and each new one first removes those whose owner is gone.
# Scratch directories hold an L1 initrd or an unpacked kit (~450 MB each).
kit_workdir() {
    local prefix=$1 dir owner
    for dir in "${TMPDIR:-/tmp}/$prefix".*; do
        [ -d "$dir" ] || continue
        owner=$(cat "$dir/.owner" 2>/dev/null) || owner=
        if [ -n "$owner" ]; then
            kill -0 "$owner" 2>/dev/null && continue
        elif [ -z "$(find "$dir" -maxdepth 0 -mmin +120)" ]; then
            continue    # no owner recorded yet: being created, or too young to judge
        fi
        rm -rf "$dir"
    done
    dir=$(mktemp -d "${TMPDIR:-/tmp}/$prefix.XXXXXX") || kit_die "cannot create a scratch directory"
    echo $$ > "$dir/.owner"
    echo "$dir"
}

kit_fetch_and_unpack() {
    local sysroot=$1; shift
    mkdir -p "$KIT_DEBS" "$sysroot"
    local missing=() pkg ver
    for pkg in "$@"; do
        ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
        [ -n "$ver" ] && [ "$ver" != "(none)" ] ||
            kit_die "package $pkg is not known to apt (run apt-get update)"
        # apt-get download names files pkg_version_arch.deb with ':' escaped.
        if ! ls "$KIT_DEBS/${pkg}_${ver//:/%3a}_"*.deb >/dev/null 2>&1; then
            missing+=("$pkg")
        fi
    done
    if [ ${#missing[@]} -gt 0 ]; then
        kit_log "downloading ${#missing[@]} packages into $KIT_DEBS"
        (cd "$KIT_DEBS" && apt-get download "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) ||
            kit_die "apt-get download failed for: ${missing[*]}"
    fi
    for pkg in "$@"; do
        ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
        dpkg-deb -x "$(ls "$KIT_DEBS/${pkg}_${ver//:/%3a}_"*.deb | head -n 1)" "$sysroot"
    done
}

# Copy the ELF program $2 (a path inside sysroot $1, or an absolute host path
# when $1 is /) into the image root $3, with the dynamic loader and every
# shared library it needs, resolved recursively inside the same sysroot.
KIT_LIBDIRS=(lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib64 usr/lib
             usr/lib/x86_64-linux-gnu/ceph usr/local/lib)
kit_copy_elf() {
    local sysroot=$1 prog=$2 root=$3
    local -A seen=()
    local queue=("$prog") f lib dir found interp
    interp=$(readelf -l "$sysroot/$prog" 2>/dev/null |
             sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
    [ -n "$interp" ] && queue+=("$interp")
    while [ ${#queue[@]} -gt 0 ]; do
        f=${queue[0]}; queue=("${queue[@]:1}")
        [ -n "${seen[$f]:-}" ] && continue
        seen[$f]=1
        mkdir -p "$root/$(dirname "$f")"
        cp -L "$sysroot/$f" "$root/$f"
        for lib in $(readelf -d "$sysroot/$f" 2>/dev/null |
                     sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            found=
            for dir in "${KIT_LIBDIRS[@]}"; do
                if [ -e "$sysroot/$dir/$lib" ]; then found=/$dir/$lib; break; fi
            done
            [ -n "$found" ] || kit_die "$f needs $lib, which is not in $sysroot"
            queue+=("$found")
        done
    done
}

# Copy kernel modules $3... (names as in modules.dep, e.g. virtio_net) and
# everything they depend on from sysroot $1 into image root $2, and write
# /etc/modules.load there: one module path per line, dependencies first, so
# an init can insmod them in order without depmod or modprobe.
kit_copy_modules() {
    local sysroot=$1 root=$2; shift 2
    local kver moddir dep
    kver=$(ls "$sysroot/lib/modules" | head -n 1)
    moddir=lib/modules/$kver
    [ -f "$sysroot/$moddir/modules.dep" ] || depmod -b "$sysroot" "$kver"
    local -A loaded=()
    local order=()
    kit_module_add() {
        local path deps d
        path=$(awk -v m="/$1.ko:" 'index($0, m) { sub(/:.*/, ""); print; exit }' \
               "$sysroot/$moddir/modules.dep")
        [ -n "$path" ] || kit_die "kernel module $1 not found in $kver"
        [ -n "${loaded[$path]:-}" ] && return 0
        deps=$(awk -v p="$path:" '$1 == p { $1 = ""; print; exit }' \
               "$sysroot/$moddir/modules.dep")
        # modules.dep lists the dependencies closest-first; load farthest first.
        for d in $(printf '%s\n' $deps | tac); do
            kit_module_add "$(basename "$d" .ko)"
        done
        loaded[$path]=1
        order+=("$path")
        mkdir -p "$root/$moddir/$(dirname "$path")"
        cp "$sysroot/$moddir/$path" "$root/$moddir/$path"
    }
    local m
    for m in "$@"; do kit_module_add "$m"; done
    mkdir -p "$root/etc"
    printf "/$moddir/%s\n" "${order[@]}" > "$root/etc/modules.load"
}

# A minimal root: busybox with its applet links, the usual directories.
kit_base_root() {
    local sysroot=$1 root=$2
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,mnt,root,var/run}
    cp "$sysroot/bin/busybox" "$root/bin/busybox"
    local applet
    for applet in $("$sysroot/bin/busybox" --list-full); do
        [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
    done
}

# Pack directory $1 into the newc cpio archive $2 (uncompressed: the kernel
# unpacks it without spending emulated cycles on decompression).
kit_cpio() {
    (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) > "$2.tmp"
    mv "$2.tmp" "$2"
}

# A stamp that changes when any input of a kit changes: the builder scripts
# and the package versions it uses. Used to make a second build a no-op.
kit_stamp() {
    { cat "$@"; apt-cache policy "${KIT_PACKAGES[@]}" | awk '/Candidate:/ { print $2 }'; } |
        sha256sum | cut -d' ' -f1
}
