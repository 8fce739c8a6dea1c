#!/bin/bash
#
# Stage 2 of a contrib/vmbed.sh guest: PID 1, started by the initramfs in
# the overlay of the host's root (so this is the host's bash and tools).
# Mounts what a system needs, reads the run's parameters from the control
# share (9p tag vmbedctl: params, cmd), brings up eth0 and rxe0, runs the
# command as root bounded by the run's timeout, writes its status (rc) and
# times (boot_s, cmd_s) to the control share, and powers off.  A setup
# failure is reported on the console and leaves no rc (the host then
# reports 125 and prints the console's end).
#
# (contrib/vmbed.sh check looks for the tools in the same PATH)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
ctl=/run/vmbed/ctl

say() { echo "vmbed-guest: $*"; }

uptime_s() { cut -d' ' -f1 /proc/uptime; }

power_off() {
    sync
    # (started before: the file systems go away with the power-off)
    sleep 30 &
    echo o >/proc/sysrq-trigger
    wait
}

fail() {
    say "setup failed: $*"
    power_off
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tmpfs -o mode=755 run /run
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
mkdir -p "$ctl" /run/vmbed/bin
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmbedctl "$ctl" ||
    fail "cannot mount the control share"
# shellcheck disable=SC1091
. "$ctl/params" || fail "no parameters in the control share"
if [ "${vmbed_mode:-run}" = run ]; then
    mapfile -d '' -t cmd <"$ctl/cmd"
    [ ${#cmd[@]} -gt 0 ] || fail "no command in the control share"
fi

# the kernel's modules, for modprobe (the host's /lib/modules has others)
mkdir -p "/lib/modules/$vmbed_kv" &&
    mount --bind "$vmbed_modules" "/lib/modules/$vmbed_kv" ||
    fail "cannot mount the modules of $vmbed_kv"

name=vm$vmbed_index
echo "$name" >/proc/sys/kernel/hostname
{
    for i in $(seq 0 $((vmbed_n - 1))); do
        echo "${vmbed_addr%.*}.$((i + 1)) vm$i"
    done
} >>/etc/hosts
ulimit -l unlimited
ulimit -n 65536

ip link set lo up || fail "no loopback"
ip link set eth0 up || fail "no eth0"
ip addr add "$vmbed_addr/$vmbed_prefix" dev eth0 || fail "cannot address eth0"
# RoCE multicast (RDMA-CM joins, UD multicast) leaves through eth0
ip route add 224.0.0.0/4 dev eth0 || fail "no multicast route"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"
for i in $(seq 300); do
    grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null &&
        break
    sleep 0.1
done
grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null ||
    fail "rxe0 port 1 not ACTIVE after 30 s"

printf '#!/bin/sh\nexec python3 %q "$@"\n' "$vmbed_guest_dir/sync.py" \
    >/run/vmbed/bin/vmbed-sync
chmod 755 /run/vmbed/bin/vmbed-sync
mkdir -p /run/vmbed/scratch
export VMBED_INDEX=$vmbed_index VMBED_N=$vmbed_n VMBED_ADDR=$vmbed_addr
export VMBED_PEER_ADDR=$vmbed_peer VMBED_DEV=rxe0
export VMBED_SCRATCH=/run/vmbed/scratch
export PATH=/run/vmbed/bin:$PATH

# the rest of the run's time (its timeout counts from QEMU's start, a
# moment before the kernel's), 5 s kept for the power-off
left() {
    awk -v l="$vmbed_limit" -v u="$(uptime_s)" \
        'BEGIN { t = int(l - u - 5); print (t < 1 ? 1 : t) }'
}

# two guests: a launcher agent for Open MPI (vmbed-exec, like ssh; its
# server answers the other guest only), and CMD starts when both are up
# and the link carries TCP
if [ "$vmbed_n" -eq 2 ]; then
    printf '#!/bin/sh\nexec python3 %q "$@"\n' "$vmbed_guest_dir/exec.py" \
        >/run/vmbed/bin/vmbed-exec
    chmod 755 /run/vmbed/bin/vmbed-exec
    python3 "$vmbed_guest_dir/exec.py" serve </dev/null \
        >/run/vmbed/exec.log 2>&1 &
    for i in $(seq 300); do
        [ -e /run/vmbed/exec.ready ] && break
        sleep 0.1
    done
    [ -e /run/vmbed/exec.ready ] || fail "the vmbed-exec server did not start"
    export OMPI_MCA_plm_rsh_agent=vmbed-exec
    export OMPI_MCA_oob_tcp_if_include=eth0 OMPI_MCA_btl_tcp_if_include=eth0
    vmbed-sync barrier boot -t "$(left)" >/dev/null ||
        fail "the other guest did not come up"
fi

# 'contrib/vmbed.sh up': serve the jobs of 'exec' until 'down'.  A job is
# a directory of the control share's jobs/ with cmd (NUL-separated), cwd
# and limit (seconds), complete once 'go' exists; its output goes to out,
# its status to rc (written last).
if [ "${vmbed_mode:-run}" = serve ]; then
    uptime_s >"$ctl/boot_s"
    mkdir -p "$ctl/jobs"
    : >"$ctl/ready"
    while [ ! -e "$ctl/stop" ]; do
        for j in "$ctl"/jobs/*; do
            [ -e "$j/go" ] && [ ! -e "$j/started" ] || continue
            : >"$j/started"
            (mapfile -d '' -t c <"$j/cmd"
             cd "$(cat "$j/cwd")" 2>/dev/null || cd /
             timeout -k 5 "$(cat "$j/limit")" "${c[@]}" </dev/null \
                 >"$j/out" 2>&1
             echo $? >"$j/rc.tmp"
             mv "$j/rc.tmp" "$j/rc") &
        done
        sleep 0.5
    done
    power_off
fi

boot=$(uptime_s)
echo "$boot" >"$ctl/boot_s"
echo "vmbed-$vmbed_mark-begin"
(cd "$vmbed_cwd" 2>/dev/null || cd /
 exec timeout -k 5 "$(left)" "${cmd[@]}") </dev/null
rc=$?
echo "vmbed-$vmbed_mark-end"
[ $rc -eq 124 ] && say "$name: the command was stopped at the run's timeout"
awk -v a="$boot" -v b="$(uptime_s)" 'BEGIN { printf "%.1f\n", b - a }' \
    >"$ctl/cmd_s"
echo "$rc" >"$ctl/rc"
power_off
