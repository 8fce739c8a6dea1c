#!/usr/bin/env bash
#
# A Soft-RoCE test bed: QEMU guests with a real verbs device on machines
# without RDMA.  Each guest runs Debian's own kernel (the package
# linux-image-amd64 depends on, unpacked into a cache, never installed),
# under QEMU's TCG always (the machines' /dev/kvm cannot run a stock
# kernel), with the host's root file system read-only over 9p beneath a
# tmpfs overlay: every package and build tree of the host is in the guest
# at the same path; what the guest writes stays in the guest.  The guest
# brings up rdma_rxe on its virtio NIC (rxe0 over eth0) and runs a command
# as root.  Two guests share a private link (a QEMU socket network on
# 127.0.0.1 of the host; their 10.77.0.x addresses exist only on it).
#
# Usage:
#   contrib/vmbed.sh run [-n 1|2] [--smp N] [--mem SIZE] [--timeout SEC]
#                        [-v] -- CMD [ARGS...]
#       boot N guests (default 1), run CMD in each, print each guest's
#       output prefixed "[vm0] ", "[vm1] ", power off; exits with the first
#       nonzero status of CMD (in time), 0 when CMD returned 0 everywhere,
#       124 when --timeout (default 300 s, boot included) expired, 125 when
#       a guest could not run CMD (its console's end is printed), 130/143 on
#       SIGINT/SIGTERM.  When CMD fails in one guest, the other gets 10 s
#       to end before it is stopped.  Nothing is left behind after any exit
#       (QEMU processes, the run directory).
#       --smp: vCPUs per guest (default 2: processes of a guest share rxe0),
#       --mem: guest memory (default 2G), -v: the whole console, not only
#       CMD's output.
#   contrib/vmbed.sh up [-n 1|2] [--smp N] [--mem SIZE] [--timeout SEC]
#       boot guests that stay up (until 'down'; --timeout bounds the boot),
#       print the bed's ID
#   contrib/vmbed.sh exec ID [vm0|vm1] [--timeout SEC] -- CMD [ARGS...]
#       run CMD in a guest of bed ID (default vm0) as 'run' would, print
#       its output (not prefixed), exit with its status (124 when --timeout,
#       default 300 s, expired; 125 when the guest is gone)
#   contrib/vmbed.sh down ID   power the guests off, remove the bed
#   contrib/vmbed.sh check     can guests run here?  (exit 0, else why, 1;
#                              fetches and prepares the kernel when not
#                              cached yet)
#   contrib/vmbed.sh prepare   fetch the kernel and build the initramfs
#                              (cached; 'run' does it too), print the entry
#   contrib/vmbed.sh clean     remove the cache
#
# CMD runs as root in the directory 'run' was started from (the host's
# path; writes go to the guest's overlay), stdin /dev/null, bounded by the
# timeout, with:
#   VMBED_INDEX      0 or 1 (the guest's hostname is vm<INDEX>)
#   VMBED_N          number of guests
#   VMBED_ADDR       the guest's IPv4 address on eth0 (10.77.0.<INDEX+1>)
#   VMBED_PEER_ADDR  the other guest's address (2 guests; else empty)
#   VMBED_DEV        rxe0 (port 1; RoCE v2 IPv4 GID at index 1)
#   VMBED_SCRATCH    an empty writable directory (tmpfs, /run/vmbed/scratch)
#   vmbed-sync       on PATH: 'vmbed-sync barrier [NAME]' waits for the
#                    other guest to reach the same barrier, 'vmbed-sync
#                    xchg VALUE' prints the other guest's VALUE (TCP on the
#                    guests' link; -t SEC bounds the wait, default 120);
#                    call them in the same order in both guests
#   vmbed-exec       on PATH (two guests): 'vmbed-exec HOST CMD...' runs
#                    CMD in guest HOST (vm0, vm1) like ssh: Open MPI's
#                    launcher agent; with two guests OMPI_MCA_plm_rsh_agent
#                    is vmbed-exec and OMPI_MCA_{oob,btl}_tcp_if_include
#                    eth0, so 'mpirun --host vm0:1,vm1:1' starts a rank in
#                    each guest
# With two guests CMD starts once both are up (a first barrier).  UCX's
# ud_verbs needs UCX_UD_VERBS_ETH_DGID_CHECK=n on rxe (the GID at index 1
# is RoCE v2 IPv4-mapped).
#
# The cache (VMBED_CACHE_DIR, default ~/.cache/ucx-o2m/vmbed) holds one
# entry per kernel package version and entry format: the kernel image (and
# its uncompressed form, booted through its PVH entry), an initramfs of
# busybox-static plus the modules the bed loads (virtio net/PCI, 9p,
# overlay, rdma_rxe, ib_uverbs, rdma_ucm and their dependencies), and the
# module tree without the hardware drivers a guest never has (for the
# guest's modprobe): about 240 MB, made in about 20 s.  The kernel package
# is resolved through apt at run time (apt-get update must have been run
# once); offline, the newest cached entry is used.  Needs: qemu-system-x86,
# busybox-static, kmod, cpio, and in the guests rdma (iproute2) and
# python3.
#
set -uo pipefail

prog=vmbed
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
guest_dir=$here/vmbed
cache_base=${VMBED_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ucx-o2m/vmbed}
qemu=qemu-system-x86_64
subnet=10.77.0
guest_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# loaded in this order by the initramfs, each with its dependencies first
init_modules="virtio_pci virtio_net 9pnet_virtio 9p overlay rdma_rxe
              ib_uverbs rdma_ucm"

say()  { echo "$prog: $*" >&2; }
die()  { say "ERROR: $*"; exit 1; }
now()  { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the initramfs ---

# /init of the initramfs (busybox sh).  Loads the modules, mounts the
# host's root (9p tag hostroot) read-only beneath a tmpfs and switches to
# the overlay, running the stage-2 script named on the kernel command line
# (vmbed_stage2=, a path of the host) with the host's bash.  Quoted: the
# same text for every entry, part of the cache key.
init_script() {
    cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
fail() {
    echo "vmbed-init: $*"
    echo o >/proc/sysrq-trigger
    sleep 30
}
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do
    insmod "/modules/$m" || echo "vmbed-init: insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 \
    hostroot /host || fail "cannot mount the host's root over 9p"
mount -t tmpfs -o size=50% vmbed-rw /rw || fail "no tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work \
    vmbed-root /newroot || fail "cannot mount the overlay"
[ -n "$vmbed_stage2" ] && [ -f "/newroot$vmbed_stage2" ] ||
    fail "no stage-2 script '$vmbed_stage2' in the host's root"
umount /sys
umount /dev
umount /proc
exec switch_root /newroot /bin/bash "$vmbed_stage2"
EOF
}

# Key of the entry's format: changes when /init, the module list or what
# an entry holds do
init_format() {
    { init_script; echo "$init_modules"; echo "vmlinux (PVH), lib/modules pruned"; } |
        md5sum | cut -c1-8
}

# "PACKAGE VERSION" of the kernel linux-image-amd64 depends on
resolve_kernel() {
    local pkg ver
    pkg=$(timeout 60 apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
    [ -n "$pkg" ] || return 1
    ver=$(timeout 60 apt-cache policy "$pkg" 2>/dev/null |
        awk '$1 == "Candidate:" { print $2; exit }')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
    echo "$pkg $ver"
}

# Copy module file $1 into directory $2 uncompressed (busybox insmod reads
# plain .ko); prints the file name
copy_module() {
    local f=$1 dst=$2 name
    name=$(basename "$f")
    case "$f" in
        *.ko)     cp "$f" "$dst/$name" ;;
        *.ko.xz)  name=${name%.xz};  xz -dc "$f" >"$dst/$name" ;;
        *.ko.zst) name=${name%.zst}; zstd -qdc "$f" >"$dst/$name" ;;
        *.ko.gz)  name=${name%.gz};  gzip -dc "$f" >"$dst/$name" ;;
        *)        return 1 ;;
    esac || return 1
    echo "$name"
}

# The uncompressed kernel of bzImage $1 into $2 when it can boot through
# its PVH entry: under TCG the guest's own decompression of the kernel
# took 8 s before its first message on an idle machine (15 s loaded), the
# uncompressed kernel starts in 1 s.  Without it QEMU boots $1.
extract_vmlinux() {
    local z=$1 out=$2 magic tool off
    for magic in 'xz \xfd7zXZ\x00' 'zstd \x28\xb5\x2f\xfd' \
                 'gzip \x1f\x8b\x08'; do
        tool=${magic%% *}
        command -v "$tool" >/dev/null || continue
        off=$(LC_ALL=C grep -obUaP -m1 "${magic#* }" "$z" 2>/dev/null |
            head -n 1 | cut -d: -f1)
        [ -n "$off" ] || continue
        # (the compressed kernel is followed by other data: an error at
        # its end is expected; the result is checked instead)
        tail -c +$((off + 1)) "$z" | "$tool" -dc >"$out" 2>/dev/null
        # an ELF image with the PVH entry note (Xen note type 0x12)
        if [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ] &&
           command -v readelf >/dev/null &&
           readelf -n "$out" 2>/dev/null | grep -q 'note type: (0x00000012)'
        then
            return 0
        fi
        rm -f "$out"
    done
    say "no PVH kernel in $z: booting the compressed one (slower)"
    return 0
}

# Build cache entry $3 for kernel package $1 version $2 in a temporary
# directory of the cache, moved into place when complete
build_entry() {
    local pkg=$1 ver=$2 key=$3 tmp kv m f name start
    start=$(now)
    kv=${pkg#linux-image-}
    tmp=$(mktemp -d "$cache_base/.build.XXXXXX") || return 1
    build_tmp=$tmp
    # (apt-get download as root drops to the _apt user: it must be able
    # to write here)
    chmod 755 "$tmp"
    say "fetching $pkg=$ver (Debian's kernel; unpacked into $cache_base," \
        "not installed)"
    if ! (cd "$tmp" && timeout 600 apt-get download -q "$pkg=$ver") \
            >"$tmp/log" 2>&1; then
        say "apt-get download $pkg=$ver failed:"
        tail -n 5 "$tmp/log" >&2
        rm -rf "$tmp"
        return 1
    fi
    mkdir "$tmp/pkg" "$tmp/initrd"
    if ! timeout 600 dpkg-deb -x "$tmp"/*.deb "$tmp/pkg" ||
       ! [ -f "$tmp/pkg/boot/vmlinuz-$kv" ]; then
        say "cannot unpack $pkg (no boot/vmlinuz-$kv in it)"
        rm -rf "$tmp"
        return 1
    fi
    # (depmod -b looks in BASE/lib/modules; a package may ship usr/lib)
    [ -d "$tmp/pkg/lib/modules/$kv" ] ||
        ln -s usr/lib "$tmp/pkg/lib" 2>/dev/null
    if ! depmod -b "$tmp/pkg" "$kv"; then
        say "depmod failed on $pkg"
        rm -rf "$tmp"
        return 1
    fi
    mkdir -p "$tmp/initrd"/{bin,modules,proc,sys,dev,host,rw,newroot}
    cp /bin/busybox "$tmp/initrd/bin/busybox" || { rm -rf "$tmp"; return 1; }
    : >"$tmp/initrd/modules.order"
    for m in $init_modules; do
        if ! modprobe -d "$tmp/pkg" -S "$kv" --show-depends "$m" \
                >"$tmp/deps" 2>&1; then
            say "kernel $kv has no module $m"
            rm -rf "$tmp"
            return 1
        fi
        # (a built-in module shows as 'builtin NAME')
        for f in $(awk '$1 == "insmod" { print $2 }' "$tmp/deps"); do
            name=$(basename "$f")
            grep -qx "${name%%.ko*}.ko" "$tmp/initrd/modules.order" &&
                continue
            name=$(copy_module "$f" "$tmp/initrd/modules") ||
                { say "cannot copy $f"; rm -rf "$tmp"; return 1; }
            echo "$name" >>"$tmp/initrd/modules.order"
        done
    done
    init_script >"$tmp/initrd/init"
    chmod 755 "$tmp/initrd/init"
    if ! (cd "$tmp/initrd" && find . | cpio -o -H newc -R 0:0 --quiet |
            gzip -1) >"$tmp/initramfs.cpio.gz"; then
        say "cannot build the initramfs"
        rm -rf "$tmp"
        return 1
    fi
    mv "$tmp/pkg/boot/vmlinuz-$kv" "$tmp/vmlinuz"
    extract_vmlinux "$tmp/vmlinuz" "$tmp/vmlinux"
    # the module tree, for the guest's modprobe (bound on its
    # /lib/modules/KV: the kernel asks for modules, e.g. crypto-crc32 when
    # rdma_rxe makes a device), without the hardware a guest never has
    # (sound, graphics, video, wireless, USB, SCSI, sensors: 200 of its
    # 400 MB)
    mkdir -p "$tmp/lib/modules"
    mv "$(readlink -f "$tmp/pkg/lib/modules/$kv")" "$tmp/lib/modules/$kv"
    m=$tmp/lib/modules/$kv/kernel
    rm -rf "$m/sound" "$m/net/wireless" "$m/net/mac80211" \
        "$m/net/bluetooth" "$m/drivers/net/wireless" "$m"/drivers/{gpu,media,staging,iio,hid,hwmon,usb,scsi,bluetooth}
    depmod -b "$tmp" "$kv" 2>/dev/null ||
        { say "depmod failed on the pruned modules"; rm -rf "$tmp"; return 1; }
    cp "$tmp/initrd/modules.order" "$tmp/modules"
    echo "$kv" >"$tmp/KV"
    echo "$pkg $ver" >"$tmp/package"
    rm -rf "$tmp/pkg" "$tmp/initrd" "$tmp"/*.deb "$tmp/deps" "$tmp/log"
    rm -rf "${cache_base:?}/$key"
    mv "$tmp" "$cache_base/$key" || { rm -rf "$tmp"; return 1; }
    touch "$cache_base/$key/ready"
    build_tmp=""
    say "kernel $kv ready in $(since "$start") s ($cache_base/$key)"
}

# Sets entry (cache directory) and kv: the current kernel's entry, built
# when missing (one process at a time: a lock in the cache)
prepare() {
    local kp pkg ver fmt key
    fmt=$(init_format)
    mkdir -p "$cache_base" || { say "cannot create $cache_base"; return 1; }
    exec 9>"$cache_base/.lock"
    if ! flock -w 900 9; then
        say "the cache $cache_base stayed locked for 900 s"
        exec 9>&-
        return 1
    fi
    if kp=$(resolve_kernel); then
        read -r pkg ver <<<"$kp"
        key="${pkg#linux-image-}_${ver//[^A-Za-z0-9.+~-]/_}_$fmt"
        if [ ! -f "$cache_base/$key/ready" ] &&
           ! build_entry "$pkg" "$ver" "$key"; then
            exec 9>&-
            return 1
        fi
    else
        # offline (no apt lists): the newest complete entry of this format
        key=$(cd "$cache_base" && ls -td -- *_"$fmt" 2>/dev/null |
            while read -r k; do
                [ -f "$k/ready" ] && { echo "$k"; break; }
            done)
        if [ -z "$key" ]; then
            say "cannot resolve the kernel package of linux-image-amd64" \
                "(run apt-get update) and no kernel is cached"
            exec 9>&-
            return 1
        fi
        say "linux-image-amd64 not resolvable; using the cached $key"
    fi
    exec 9>&-
    entry=$cache_base/$key
    kv=$(cat "$entry/KV")
    kernel=$entry/vmlinuz
    [ -f "$entry/vmlinux" ] && kernel=$entry/vmlinux
}

# --- a run ---

run_dir=""
build_tmp=""
qpids=()
fpids=()

alive() {
    local st
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
    read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null || return 1
    [ "$st" != Z ]
}

# Stop every QEMU of the run and its console reader, remove the run
# directory.  Never fails; only processes this run started.
teardown() {
    local pid i left
    # (a cache entry being built when a signal came)
    [ -z "$build_tmp" ] || rm -rf "$build_tmp"
    build_tmp=""
    [ -n "$run_dir" ] || return 0
    for pid in "${qpids[@]}"; do
        alive "$pid" && kill -TERM "$pid" 2>/dev/null
    done
    for i in $(seq 50); do
        left=0
        for pid in "${qpids[@]}" "${fpids[@]}"; do
            alive "$pid" && left=1
        done
        [ $left -eq 0 ] && break
        [ "$i" -eq 30 ] && for pid in "${qpids[@]}" "${fpids[@]}"; do
            alive "$pid" && kill -KILL "$pid" 2>/dev/null
        done
        sleep 0.1
    done
    for pid in "${qpids[@]}" "${fpids[@]}"; do
        wait "$pid" 2>/dev/null
    done
    rm -rf "$run_dir"
    run_dir=""
}

# Guest $1's console (stdin) into its log; the lines between the guest's
# markers (CMD's output) prefixed on stdout, all of them with -v.  Line by
# line as they come (awk would hold them in its buffer).
console_filter() {
    local i=$1 line on=0 begin="vmbed-$token-begin" end="vmbed-$token-end"
    exec 3>"$run_dir/console$i.log"
    while IFS= read -r line || [ -n "$line" ]; do
        while [[ $line == *$'\r' ]]; do line=${line%$'\r'}; done
        printf '%s\n' "$line" >&3
        if [ "$line" = "$begin" ]; then
            on=1
        elif [[ $line == *"$end"* ]]; then
            # (CMD's last output without a newline, then the marker)
            line=${line%%"$end"*}
            [ -z "$line" ] || printf '[vm%s] %s\n' "$i" "$line"
            on=0
        elif [ $on -eq 1 ] || [ "$verbose" = 1 ]; then
            printf '[vm%s] %s\n' "$i" "$line"
        fi
    done
}

# Start guest $1 with the network arguments that follow; sets qpids[$1]
# and fpids[$1] (its console reader: prefixes CMD's lines)
start_guest() {
    local i=$1 fifo
    shift
    guest_args "$i"
    if [ "$mode" = serve ]; then
        # ('up': outlives this process, out of its session; the console
        # goes to a file)
        setsid "$qemu" "${qemu_args[@]}" "$@" \
            -device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:77:00:0$i" \
            </dev/null >"$run_dir/qemu$i.log" 2>&1 &
        qpids[$i]=$!
        return 0
    fi
    fifo=$run_dir/console$i.fifo
    mkfifo "$fifo" || return 1
    console_filter "$i" <"$fifo" &
    fpids[$i]=$!
    "$qemu" "${qemu_args[@]}" "$@" \
        -device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:77:00:0$i" \
        </dev/null >"$fifo" 2>&1 &
    qpids[$i]=$!
}

# QEMU's arguments for guest $1 but the network (qemu_args)
guest_args() {
    local i=$1 console=stdio,id=con0,signal=off
    [ "$mode" = serve ] && console=file,id=con0,path=$run_dir/console$i.log
    qemu_args=(-name "vmbed-$token-vm$i" -accel tcg -cpu max \
        -smp "$smp" -m "$mem" -nodefaults -no-user-config -display none \
        -no-reboot -chardev "$console" -serial chardev:con0 \
        -kernel "$kernel" -initrd "$entry/initramfs.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet vmbed_stage2=$guest_dir/guest.sh" \
        -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
        -virtfs "local,path=$run_dir/vm$i,mount_tag=vmbedctl,security_model=none")
}

# A port on 127.0.0.1 that nothing listens on now (QEMU may still lose
# it to another process: then it exits and the caller tries again)
free_port() {
    local p k
    for k in $(seq 50); do
        p=$((20000 + RANDOM % 12000))
        [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && { echo $p; return 0; }
    done
    return 1
}

# Boot the guests: one on a link of its own (a QEMU hub with one port),
# two on a socket link (guest 0 listens on 127.0.0.1, guest 1 connects)
start_guests() {
    local port k i
    if [ "$n" -eq 1 ]; then
        start_guest 0 -netdev hubport,id=n0,hubid=0
        return
    fi
    for k in $(seq 5); do
        port=$(free_port) || { say "no free port on 127.0.0.1"; return 1; }
        start_guest 0 -netdev "socket,id=n0,listen=127.0.0.1:$port" ||
            return 1
        for i in $(seq 100); do
            alive "${qpids[0]}" || break
            [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && break
            sleep 0.1
        done
        if alive "${qpids[0]}" &&
           [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
            start_guest 1 -netdev "socket,id=n0,connect=127.0.0.1:$port"
            return
        fi
        # (QEMU lost the port, or did not listen: stop it, try another)
        kill -KILL "${qpids[0]}" 2>/dev/null
        wait "${qpids[0]}" 2>/dev/null
        wait "${fpids[0]}" 2>/dev/null
        rm -f "$run_dir/console0.fifo"
        say "guest 0 could not listen on 127.0.0.1:$port; another port"
    done
    return 1
}

# The guest's parameters, read by contrib/vmbed/guest.sh from its control
# share
write_params() {
    local i=$1 peer=""
    [ "$n" -eq 2 ] && peer="$subnet.$((2 - i))"
    {
        printf 'vmbed_index=%q\n' "$i"
        printf 'vmbed_n=%q\n' "$n"
        printf 'vmbed_addr=%q\n' "$subnet.$((i + 1))"
        printf 'vmbed_peer=%q\n' "$peer"
        printf 'vmbed_prefix=%q\n' 24
        printf 'vmbed_limit=%q\n' "$limit"
        printf 'vmbed_mark=%q\n' "$token"
        printf 'vmbed_mode=%q\n' "$mode"
        printf 'vmbed_cwd=%q\n' "$PWD"
        printf 'vmbed_guest_dir=%q\n' "$guest_dir"
        printf 'vmbed_kv=%q\n' "$kv"
        printf 'vmbed_modules=%q\n' "$entry/lib/modules/$kv"
    } >"$run_dir/vm$i/params"
}

# The end of guest $1's console, for a guest that did not run CMD
show_console() {
    say "vm$1: the end of its console:"
    tail -n 25 "$run_dir/console$1.log" 2>/dev/null | sed "s/^/[vm$1] | /" >&2
}

cmd_run() {
    local i rc first="" grace_end="" deadline start done_n=0 st
    local -a ended rcs
    n=1 smp=2 mem=2G limit=300 verbose=0 mode=run
    while [ $# -gt 0 ]; do
        case "$1" in
            -n)        n=$2; shift 2 ;;
            --smp)     smp=$2; shift 2 ;;
            --mem)     mem=$2; shift 2 ;;
            --timeout) limit=$2; shift 2 ;;
            -v)        verbose=1; shift ;;
            --)        shift; break ;;
            *)         die "run: unknown argument '$1'" ;;
        esac
    done
    [ $# -gt 0 ] || die "run: no command (run [-n 1|2] ... -- CMD...)"
    [ "$n" = 1 ] || [ "$n" = 2 ] || die "run: -n is 1 or 2, not '$n'"
    [[ $smp =~ ^[0-9]+$ ]] && [ "$smp" -ge 1 ] && [ "$smp" -le 16 ] ||
        die "run: bad --smp '$smp'"
    [[ $mem =~ ^[0-9]+[MG]$ ]] || die "run: bad --mem '$mem' (e.g. 2G, 1536M)"
    [[ $limit =~ ^[0-9]+$ ]] && [ "$limit" -ge 20 ] ||
        die "run: --timeout is at least 20 s, not '$limit'"
    [[ $guest_dir =~ ^[^[:space:],]+$ ]] ||
        die "run: the bed's path '$guest_dir' has a space or comma"
    command -v "$qemu" >/dev/null || die "no $qemu (contrib/vmbed.sh check)"

    # teardown on every exit; a second signal must not cut it short
    trap 'rc=$?; trap "" INT TERM; teardown; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    prepare || exit 1
    run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ucx-o2m-vmbed.XXXXXX") ||
        die "cannot make a run directory"
    token=$(basename "$run_dir")
    token=${token##*.}
    for i in $(seq 0 $((n - 1))); do
        mkdir "$run_dir/vm$i" || exit 1
        printf '%s\0' "$@" >"$run_dir/vm$i/cmd" || exit 1
        write_params "$i" || exit 1
    done
    start=$(now)
    deadline=$((SECONDS + limit + 15))
    say "booting $n guest(s) (kernel $kv, TCG, $smp vCPU, $mem; run" \
        "$run_dir, timeout $limit s)"
    start_guests || exit 125

    # The guests bound CMD by the timeout themselves (minus their boot);
    # this loop is the backstop, and stops the other guest 10 s after a
    # failure
    while [ "$done_n" -lt "$n" ]; do
        for i in $(seq 0 $((n - 1))); do
            [ -z "${ended[$i]:-}" ] || continue
            alive "${qpids[$i]}" && continue
            wait "${qpids[$i]}" 2>/dev/null
            ended[$i]=1
            done_n=$((done_n + 1))
            st=$(cat "$run_dir/vm$i/rc" 2>/dev/null)
            if [[ $st =~ ^[0-9]{1,3}$ ]] && [ "$st" -le 255 ]; then
                rcs[$i]=$st
                say "vm$i: CMD exited with $st (booted in" \
                    "$(cat "$run_dir/vm$i/boot_s" 2>/dev/null) s, CMD took" \
                    "$(cat "$run_dir/vm$i/cmd_s" 2>/dev/null) s)"
            else
                rcs[$i]=125
                say "vm$i: ended without running CMD to its end"
                show_console "$i"
            fi
            if [ "${rcs[$i]}" -ne 0 ] && [ -z "$first" ]; then
                first=${rcs[$i]}
                grace_end=$((SECONDS + 10))
            fi
        done
        [ "$done_n" -lt "$n" ] || break
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "timeout: $limit s expired; stopping the guests"
            [ -n "$first" ] || first=124
            break
        fi
        if [ -n "$grace_end" ] && [ "$SECONDS" -ge "$grace_end" ]; then
            for i in $(seq 0 $((n - 1))); do
                [ -n "${ended[$i]:-}" ] || say "stopping vm$i (the other" \
                    "guest failed)"
            done
            break
        fi
        sleep 0.2
    done
    rc=${first:-0}
    teardown
    say "done in $(since "$start") s: exit $rc"
    exit "$rc"
}

# --- guests that stay up ---

bed_base=${VMBED_STATE_DIR:-${TMPDIR:-/tmp}/ucx-o2m-vmbeds}

# Sets run_dir, n and qpids of bed $1 (made by 'up')
load_bed() {
    local id=$1 i pid
    case "$id" in
        vmbed.*) ;;
        *) die "bad bed id '$id'" ;;
    esac
    run_dir=$bed_base/$id
    [ -f "$run_dir/pids" ] || { run_dir=""; die "no bed '$id'"; }
    n=0
    while read -r i pid; do
        qpids[$i]=$pid
        n=$((n + 1))
    done <"$run_dir/pids"
}

cmd_up() {
    local i k ready
    n=1 smp=2 mem=2G limit=300 verbose=0 mode=serve
    while [ $# -gt 0 ]; do
        case "$1" in
            -n)        n=$2; shift 2 ;;
            --smp)     smp=$2; shift 2 ;;
            --mem)     mem=$2; shift 2 ;;
            --timeout) limit=$2; shift 2 ;;
            *)         die "up: unknown argument '$1'" ;;
        esac
    done
    [ "$n" = 1 ] || [ "$n" = 2 ] || die "up: -n is 1 or 2, not '$n'"
    [[ $smp =~ ^[0-9]+$ ]] && [ "$smp" -ge 1 ] && [ "$smp" -le 16 ] ||
        die "up: bad --smp '$smp'"
    [[ $mem =~ ^[0-9]+[MG]$ ]] || die "up: bad --mem '$mem'"
    [[ $limit =~ ^[0-9]+$ ]] && [ "$limit" -ge 20 ] ||
        die "up: --timeout is at least 20 s, not '$limit'"
    # (until the guests are up: torn down on any exit)
    trap 'rc=$?; trap "" INT TERM; teardown; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    prepare || exit 1
    mkdir -p "$bed_base" && run_dir=$(mktemp -d "$bed_base/vmbed.XXXXXX") ||
        die "cannot make a bed directory in $bed_base"
    token=${run_dir##*.}
    for i in $(seq 0 $((n - 1))); do
        mkdir "$run_dir/vm$i" && write_params "$i" || exit 1
    done
    say "booting $n guest(s) (kernel $kv, TCG, $smp vCPU, $mem; bed" \
        "$run_dir)"
    start_guests || exit 125
    for k in $(seq $((limit * 5))); do
        ready=0
        for i in $(seq 0 $((n - 1))); do
            [ -e "$run_dir/vm$i/ready" ] && ready=$((ready + 1))
            alive "${qpids[$i]}" && continue
            say "vm$i ended while booting"
            show_console "$i"
            exit 125
        done
        [ $ready -eq "$n" ] && break
        sleep 0.2
    done
    [ $ready -eq "$n" ] || { say "not up within $limit s"; exit 124; }
    for i in $(seq 0 $((n - 1))); do
        echo "$i ${qpids[$i]}"
    done >"$run_dir/pids"
    trap - EXIT INT TERM
    say "up: vm0..vm$((n - 1)) (booted in $(cat "$run_dir/vm0/boot_s") s)"
    basename "$run_dir"
}

cmd_exec() {
    local id i=0 job pos=0 size deadline rc=""
    [ $# -ge 1 ] || die "exec ID [vm0|vm1] [--timeout SEC] -- CMD..."
    id=$1; shift
    limit=300
    while [ $# -gt 0 ]; do
        case "$1" in
            vm[0-9])   i=${1#vm}; shift ;;
            --timeout) limit=$2; shift 2 ;;
            --)        shift; break ;;
            *)         die "exec: unknown argument '$1'" ;;
        esac
    done
    [ $# -gt 0 ] || die "exec: no command"
    [[ $limit =~ ^[0-9]+$ ]] && [ "$limit" -ge 1 ] ||
        die "exec: bad --timeout '$limit'"
    load_bed "$id"
    [ "$i" -lt "$n" ] || die "no guest vm$i in bed $id"
    job=$run_dir/vm$i/jobs/$$.$RANDOM
    mkdir -p "$job" || die "cannot make a job in $run_dir"
    printf '%s\0' "$@" >"$job/cmd"
    echo "$PWD" >"$job/cwd"
    echo "$limit" >"$job/limit"
    : >"$job/go"
    # (a signal ends the wait; the job ends at its limit in the guest)
    trap 'rm -rf "$job"; exit 130' INT
    trap 'rm -rf "$job"; exit 143' TERM
    deadline=$((SECONDS + limit + 15))
    while :; do
        [ -f "$job/rc" ] && rc=$(cat "$job/rc")
        size=$(stat -c %s "$job/out" 2>/dev/null || echo 0)
        if [ "$size" -gt "$pos" ]; then
            tail -c +$((pos + 1)) "$job/out" | head -c $((size - pos))
            pos=$size
        fi
        [ -n "$rc" ] && break
        if ! alive "${qpids[$i]}"; then
            say "vm$i is gone"
            rc=125
            break
        fi
        if [ $SECONDS -ge $deadline ]; then
            say "exec: no status from vm$i within $limit s"
            rc=124
            break
        fi
        sleep 0.3
    done
    rm -rf "$job"
    [[ $rc =~ ^[0-9]{1,3}$ ]] || rc=125
    exit "$rc"
}

cmd_down() {
    local id i k pid left
    [ $# -eq 1 ] || die "down ID"
    id=$1
    load_bed "$id"
    for i in $(seq 0 $((n - 1))); do
        : >"$run_dir/vm$i/stop"
    done
    # (the guests power off at their next look; then QEMU is stopped)
    for k in $(seq 100); do
        left=0
        for pid in "${qpids[@]}"; do
            alive "$pid" && grep -qF "$run_dir" "/proc/$pid/cmdline" &&
                left=1
        done
        [ $left -eq 0 ] && break
        sleep 0.2
    done
    for pid in "${qpids[@]}"; do
        alive "$pid" && grep -qF "$run_dir" "/proc/$pid/cmdline" 2>/dev/null &&
            kill -KILL "$pid"
    done
    rm -rf "$run_dir"
    rmdir "$bed_base" 2>/dev/null
    say "bed $id down"
}

# --- check, prepare, clean ---

cmd_check() {
    local t
    trap 'rc=$?; trap "" INT TERM; teardown; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    for t in "$qemu" modprobe depmod cpio gzip dpkg-deb apt-get apt-cache \
             flock ss timeout awk md5sum; do
        command -v "$t" >/dev/null || { say "'$t' is missing (contrib/bootstrap.sh installs it)"; return 1; }
    done
    # (the guests' tools: the host's, with the guests' PATH)
    for t in bash python3 rdma ip mount timeout modprobe; do
        PATH=$guest_path command -v "$t" >/dev/null ||
            { say "'$t' is missing in $guest_path"; return 1; }
    done
    [ -x /bin/busybox ] || { say "no /bin/busybox (busybox-static)"; return 1; }
    if ldd /bin/busybox >/dev/null 2>&1; then
        say "/bin/busybox is not static (install busybox-static)"
        return 1
    fi
    "$qemu" -accel help 2>/dev/null | grep -qx tcg ||
        { say "$qemu has no TCG accelerator"; return 1; }
    "$qemu" -device help 2>/dev/null | grep -q '"virtio-9p-pci"' ||
        { say "$qemu has no 9p (virtfs) support"; return 1; }
    prepare || return 1
    grep -q '^rdma_rxe\.ko$' "$entry/modules" ||
        { say "the initramfs of $entry has no rdma_rxe"; return 1; }
    say "ready: kernel $kv ($(cat "$entry/package")), cache $entry"
}

cmd_prepare() {
    trap 'rc=$?; trap "" INT TERM; teardown; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    prepare || exit 1
    echo "$entry"
}

cmd_clean() {
    [ -d "$cache_base" ] || return 0
    exec 9>"$cache_base/.lock"
    flock -w 60 9 || die "the cache $cache_base is in use"
    rm -rf "${cache_base:?}"/* "$cache_base"/.build.*
    exec 9>&-
    rm -rf "$cache_base"
    say "removed $cache_base"
}

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

sub=${1:-}
[ $# -gt 0 ] && shift
case "$sub" in
    run)     cmd_run "$@" ;;
    up)      cmd_up "$@" ;;
    exec)    cmd_exec "$@" ;;
    down)    cmd_down "$@" ;;
    check)   cmd_check ;;
    prepare) cmd_prepare ;;
    clean)   cmd_clean ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
esac
