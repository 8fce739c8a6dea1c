#!/usr/bin/env bash
#
# Several "hosts" on one machine for MPI/UCG tests across hosts.  A host is
# a set of Linux namespaces held by one long-lived init process: its own
# network stack (netns: one interface eth0 on a private bridge, no route
# out), hostname (UTS: h1, h2, ...), System V IPC, mounts (its own tmpfs on
# /dev/shm) and process ids (pid namespace).  So, like real hosts, they share
# no shared memory: UCX (boot id + IPC/pid namespace) and UCG (hostname +
# boot id + pid namespace) both see different hosts.  The bridge and the
# launcher's address are in a "head" network namespace: nothing is added to
# the machine's own network namespace, and every name is unique per bed.
#
# Usage (as root):
#   contrib/multihost.sh run [-n HOSTS] [-l LOSS]... [-t SECONDS] -- CMD...
#       bring a bed up, run CMD in the head namespace (where mpirun runs),
#       tear the bed down on any exit (also on error, SIGINT, SIGTERM);
#       exits with CMD's status (124 when -t expired)
#   contrib/multihost.sh up [-n HOSTS]      bring a bed up, print its id
#   contrib/multihost.sh exec ID [HOST] -- CMD...
#       run CMD in the head namespace, or on HOST (h1, h2, ...)
#   contrib/multihost.sh loss ID HOST PCT SPEC...   drop PCT % of packets
#   contrib/multihost.sh loss ID HOST off           remove HOST's loss rules
#   contrib/multihost.sh stats ID          HOSTs' loss rules with counters
#   contrib/multihost.sh down ID           tear a bed down
#   contrib/multihost.sh clean             tear down beds whose owner exited
#   contrib/multihost.sh check             can beds be made here? (exit 0/1)
#
# CMD gets the environment for Open MPI (launcher agent, TCP on the bed's
# subnet only, no tree spawn, session directories in the bed's directory,
# yield when idle: the hosts share this machine's cores),
# so that `mpirun --host h1:2,h2:2 -np 4 ./a.out` starts two ranks on each
# host, plus MULTIHOST_ID, MULTIHOST_DIR, MULTIHOST_HOSTS, MULTIHOST_SUBNET.
#
# LOSS (-l) is HOST,PCT,SPEC[,SPEC...]; SPEC is [in/|out/]KIND[:PORTS] with
# KIND udp, tcp or mcast (UDP to IPv4 multicast destinations 224.0.0.0/4;
# IGMP is never dropped) or all, PORTS a destination port or range (5000 or
# 5000-5100); in/ (default) drops packets HOST receives, out/ packets it
# sends.  The drops are real kernel drops (nftables `numgen random`), counted
# per rule (stats).  Example: -l h2,10,mcast:5000-5100,udp:6000
#
# Each host: eth0 with SUBNET.<i>/24 (h1 = .1), a route for 224.0.0.0/4 on
# eth0 and no other route; the head has SUBNET.254 on the bridge br0
# (multicast snooping on, the kernel's default).  Names come from /etc/hosts
# files given to the namespaces (ip netns' /etc/netns/<ns>/hosts).
#
# Environment: MULTIHOST_STATE_DIR (default /run/ucx-o2m-multihost) holds a
# directory per bed; a bed's namespaces are named o2m<pid>[-k]-hd (head),
# o2m<pid>[-k]-h<i>; its subnet is 10.X.Y.0/24 from the same pid, unique
# among the beds of that directory.
#
set -uo pipefail

prog=multihost
base=${MULTIHOST_STATE_DIR:-/run/ucx-o2m-multihost}
nft_table="inet o2m_bed"

say()  { echo "$prog: $*" >&2; }
die()  { say "ERROR: $*"; exit 1; }
now()  { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# --- a bed's state (directory $base/ID) ---
#   owner    pid of the process that made it (clean: removes it once gone)
#   netns    the network namespaces made, one a line, in order
#   inits    "HOST PID": the init process of each host (pid in our pid ns)
#   hosts    host names, one line;  subnet  e.g. 10.48.57
#   agent    Open MPI's launcher agent;  tmp/  Open MPI session directories
#   etc_netns_made  /etc/netns did not exist before (removed when empty)

bed_dir() { echo "$base/$1"; }

load_bed() {
    local id=$1
    case "$id" in
        ''|*/*|.*) die "bad bed id '$id'" ;;
    esac
    dir=$(bed_dir "$id")
    [ -f "$dir/owner" ] || die "no bed '$id' (no $dir/owner)"
    bed_id=$id
    hosts=$(cat "$dir/hosts" 2>/dev/null)
    subnet=$(cat "$dir/subnet" 2>/dev/null)
}

host_ns()   { echo "${bed_id}-$1"; }
head_ns()   { echo "${bed_id}-hd"; }
host_init() { awk -v h="$1" '$1 == h { print $2 }' "$dir/inits" 2>/dev/null; }

valid_host() {
    local h
    for h in $hosts; do [ "$h" = "$1" ] && return 0; done
    return 1
}

# Remove everything of bed $bed_id: processes in its namespaces, the
# namespaces (their interfaces, bridge and nft tables go with them), the
# /etc/netns entries and the state directory.  Only names listed in the
# state directory are touched.  Never fails.
teardown() {
    local ns pid pids i start
    start=$(now)
    [ -n "${bed_id:-}" ] && [ -d "$dir" ] || return 0

    # the hosts' init processes (still in the host's network namespace,
    # not a reused pid): their pid namespaces die with them
    if [ -f "$dir/inits" ]; then
        while read -r h pid; do
            [ -n "$pid" ] &&
                [ "$(ip netns identify "$pid" 2>/dev/null)" = \
                  "$(host_ns "$h")" ] && kill -KILL "$pid" 2>/dev/null
        done <"$dir/inits"
    fi
    # whatever else runs in the bed's network namespaces (mpirun, nsenter)
    if [ -f "$dir/netns" ]; then
        for i in $(seq 50); do
            pids=""
            while read -r ns; do
                pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
            done <"$dir/netns"
            [ -z "${pids// /}" ] && break
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null
            sleep 0.1
        done
        [ -z "${pids// /}" ] || say "processes left in bed $bed_id:$pids"
        while read -r ns; do
            ip netns del "$ns" 2>/dev/null
            rm -rf "/etc/netns/$ns"
        done <"$dir/netns"
        [ -f "$dir/etc_netns_made" ] && rmdir /etc/netns 2>/dev/null
    fi
    rm -rf "$dir"
    rmdir "$base" 2>/dev/null
    say "bed $bed_id down in $(since "$start") s"
    bed_id=""
}

# --- bring a bed up ---

# A subnet 10.X.Y from the pid, not used by another bed of $base
pick_subnet() {
    local k s used
    used=$(cat "$base"/*/subnet 2>/dev/null)
    for k in $(seq 0 255); do
        s=$(( ($$ + k * 7919) % 65536 ))
        s="10.$((s / 256)).$((s % 256))"
        grep -qx "$s" <<<"$used" || { echo "$s"; return 0; }
    done
    return 1
}

# Make the bed's state directory and id (o2m<pid>, o2m<pid>-2, ...)
new_bed() {
    local k id
    for k in $(seq 1 20); do
        id="o2m$$"
        [ "$k" -gt 1 ] && id="o2m$$-$k"
        # (again each time: the teardown of another bed removes it when
        # it is empty)
        mkdir -p "$base" || die "cannot create $base"
        if mkdir "$base/$id" 2>/dev/null; then
            if ip netns list 2>/dev/null | grep -q "^$id-"; then
                rmdir "$base/$id"
                continue
            fi
            bed_id=$id
            dir="$base/$id"
            echo "$$" >"$dir/owner"
            return 0
        fi
    done
    die "no free bed id in $base"
}

add_netns() {
    ip netns add "$1" || return 1
    echo "$1" >>"$dir/netns"
    ip -n "$1" link set lo up
}

# run "$@" and name it on failure
try() {
    "$@" && return 0
    say "failed: $*"
    return 1
}

# The init process of host $1 (number $2): holds its UTS, IPC, mount and
# pid namespaces, inside its network namespace, until the bed goes down
start_host_init() {
    local h=$1 ns upid cpid i
    ns=$(host_ns "$h")
    # in the new namespaces: own hostname, own /dev/shm; then reap the
    # orphans of the host (orted daemonizes) until the bed goes down (perl
    # is essential in Debian: no build step for a reaper)
    setsid ip netns exec "$ns" unshare --uts --ipc --mount --pid --fork \
        --kill-child --mount-proc /bin/sh -c '
            echo "$1" >/proc/sys/kernel/hostname &&
            mount -t tmpfs -o mode=1777,size=50% o2m-shm /dev/shm &&
            touch "$2" &&
            exec perl -e "while (1) { waitpid(-1, 0) > 0 or sleep 1 }"' \
        init "$h" "$dir/ready.$h" </dev/null >/dev/null 2>&1 &
    upid=$!
    for i in $(seq 100); do
        [ -e "$dir/ready.$h" ] && break
        kill -0 "$upid" 2>/dev/null || break
        sleep 0.05
    done
    rm -f "$dir/ready.$h"
    # the namespace's pid 1 is unshare's child
    cpid=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null | awk '{print $1}')
    if [ -z "$cpid" ] || [ "$(readlink "/proc/$cpid/ns/uts")" = \
                             "$(readlink /proc/self/ns/uts)" ]; then
        kill -KILL "$upid" 2>/dev/null
        say "host $h: its namespaces could not be made"
        return 1
    fi
    echo "$h $cpid" >>"$dir/inits"
}

write_agent() {
    cat >"$dir/agent" <<EOF
#!/bin/sh
# Open MPI launcher agent of bed $bed_id: "agent HOST COMMAND..." runs
# COMMAND on HOST (in its namespaces), as ssh would on a real host.
host=\$1; shift
pid=\$(awk -v h="\$host" '\$1 == h { print \$2 }' "$dir/inits")
if [ -z "\$pid" ]; then
    echo "multihost agent: no host '\$host' in bed $bed_id" >&2
    exit 255
fi
exec nsenter --target "\$pid" --net --uts --ipc --mount --pid \\
    --wd="\$PWD" -- \\
    /bin/sh -c "\$*"
EOF
    chmod 755 "$dir/agent"
}

bring_up() {
    local n=$1 i h ns head start hosts_file
    start=$(now)
    new_bed
    subnet=$(pick_subnet) || { say "no free subnet"; return 1; }
    echo "$subnet" >"$dir/subnet"
    hosts=""
    for i in $(seq "$n"); do hosts+="h$i "; done
    hosts=${hosts% }
    echo "$hosts" >"$dir/hosts"
    mkdir -p "$dir/tmp"

    # name resolution inside the bed (ip netns exec binds these on /etc)
    hosts_file="127.0.0.1 localhost"$'\n'"$subnet.254 head"$'\n'
    for i in $(seq "$n"); do hosts_file+="$subnet.$i h$i"$'\n'; done

    head=$(head_ns)
    [ -d /etc/netns ] || touch "$dir/etc_netns_made"
    try add_netns "$head" || return 1
    mkdir -p "/etc/netns/$head" && printf '%s' "$hosts_file" \
        >"/etc/netns/$head/hosts" || return 1
    try ip -n "$head" link add br0 type bridge || return 1
    try ip -n "$head" addr add "$subnet.254/24" dev br0 || return 1
    try ip -n "$head" link set br0 up || return 1

    for i in $(seq "$n"); do
        h=h$i
        ns=$(host_ns "$h")
        try add_netns "$ns" || return 1
        mkdir -p "/etc/netns/$ns" && printf '%s' "$hosts_file" \
            >"/etc/netns/$ns/hosts" || return 1
        try ip -n "$head" link add "$h" type veth peer name eth0 \
            netns "$ns" || return 1
        try ip -n "$head" link set "$h" master br0 up || return 1
        try ip -n "$ns" addr add "$subnet.$i/24" dev eth0 || return 1
        try ip -n "$ns" link set eth0 up || return 1
        try ip -n "$ns" route add 224.0.0.0/4 dev eth0 || return 1
        # loss chains (empty until 'loss'), input and output
        try ip netns exec "$ns" nft -f - <<EOF || return 1
table $nft_table {
    chain loss_in  { type filter hook input  priority 0; policy accept; }
    chain loss_out { type filter hook output priority 0; policy accept; }
}
EOF
        start_host_init "$h" || return 1
    done
    write_agent
    say "bed $bed_id up in $(since "$start") s: hosts $hosts on" \
        "$subnet.0/24 (state $dir)"
}

# Environment for commands in the bed
bed_env() {
    echo "MULTIHOST_ID=$bed_id"
    echo "MULTIHOST_DIR=$dir"
    echo "MULTIHOST_HOSTS=$hosts"
    echo "MULTIHOST_SUBNET=$subnet.0/24"
    echo "OMPI_MCA_plm_rsh_agent=$dir/agent"
    echo "OMPI_MCA_plm_rsh_no_tree_spawn=1"
    echo "OMPI_MCA_oob_tcp_if_include=$subnet.0/24"
    echo "OMPI_MCA_btl_tcp_if_include=$subnet.0/24"
    echo "OMPI_MCA_orte_tmpdir_base=$dir/tmp"
    # the hosts share the machine's cores: a rank waiting in a busy poll
    # takes the core from the rank it waits for (a 4-rank job on 2 hosts
    # of this 2-core machine ran 20 times longer without it)
    echo "OMPI_MCA_mpi_yield_when_idle=1"
}

run_in_bed() {
    local where=$1 pid
    shift
    local envs=()
    mapfile -t envs < <(bed_env)
    if [ "$where" = head ]; then
        ip netns exec "$(head_ns)" env "${envs[@]}" "$@"
    else
        pid=$(host_init "$where")
        [ -n "$pid" ] || die "no host '$where' in bed $bed_id"
        nsenter --target "$pid" --net --uts --ipc --mount --pid \
            --wd="$PWD" -- \
            env "${envs[@]}" "$@"
    fi
}

# --- loss ---

# nft rule text for SPEC (without the verdict), "" on a bad SPEC
loss_match() {
    local kind=${1%%:*} ports="" m
    [ "$kind" != "$1" ] && ports=${1#*:}
    if [ -n "$ports" ] && ! [[ $ports =~ ^[0-9]+(-[0-9]+)?$ ]]; then
        return 1
    fi
    case "$kind" in
        udp)   m="meta l4proto udp${ports:+ udp dport $ports}" ;;
        tcp)   m="meta l4proto tcp${ports:+ tcp dport $ports}" ;;
        mcast) m="ip daddr 224.0.0.0/4 meta l4proto udp${ports:+ udp dport $ports}" ;;
        all)   [ -z "$ports" ] || return 1; m="" ;;
        *)     return 1 ;;
    esac
    echo "$m"
}

set_loss() {
    local h=$1 pct=$2 ns spec dirn chain m rules=""
    shift 2
    valid_host "$h" || die "no host '$h' in bed $bed_id (hosts: $hosts)"
    ns=$(host_ns "$h")
    if [ "$pct" = off ]; then
        ip netns exec "$ns" nft flush chain $nft_table loss_in &&
            ip netns exec "$ns" nft flush chain $nft_table loss_out ||
            die "host $h: could not remove its loss rules"
        say "host $h: no loss"
        return 0
    fi
    [[ $pct =~ ^[0-9]+$ ]] && [ "$pct" -le 100 ] ||
        die "loss percentage '$pct' is not 0..100"
    [ $# -gt 0 ] || die "loss: no SPEC (udp[:PORTS], tcp[:PORTS], mcast[:PORTS], all)"
    for spec in "$@"; do
        dirn=in
        case "$spec" in
            in/*)  spec=${spec#in/} ;;
            out/*) dirn=out; spec=${spec#out/} ;;
        esac
        chain=loss_$dirn
        m=$(loss_match "$spec") || die "bad loss SPEC '$spec'"
        # (numgen's values are 0..99: 100 % needs no random number)
        [ "$pct" -lt 100 ] && m+=" numgen random mod 100 < $pct"
        [ "$pct" -gt 0 ] &&
            rules+="add rule $nft_table $chain $m counter drop"$'\n'
    done
    [ -z "$rules" ] || ip netns exec "$ns" nft -f - <<<"$rules" ||
        die "host $h: could not add the loss rules"
    say "host $h: $pct % loss on $*"
}

show_stats() {
    local h
    for h in $hosts; do
        echo "== $h"
        ip netns exec "$(host_ns "$h")" nft list table $nft_table |
            grep -E 'chain|drop'
    done
}

# --- subcommands ---

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces)"
}

# Exits 0 when a bed can be made here: root, the tools, and the kernel's
# namespaces (tried with a throw-away process)
cmd_check() {
    local t
    [ "$(id -u)" -eq 0 ] || { say "not root"; return 1; }
    for t in ip nft unshare nsenter setsid; do
        command -v "$t" >/dev/null || { say "'$t' is missing"; return 1; }
    done
    if ! unshare --net --uts --ipc --mount --pid --fork --mount-proc \
            /bin/sh -c 'ip link set lo up && nft list tables >/dev/null' \
            2>/dev/null; then
        say "cannot create network/UTS/IPC/mount/pid namespaces with nftables here"
        return 1
    fi
    return 0
}

cmd_up() {
    local n=2
    while [ $# -gt 0 ]; do
        case "$1" in
            -n) n=$2; shift 2 ;;
            *)  die "up: unknown argument '$1'" ;;
        esac
    done
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
        die "bad number of hosts '$n'"
    need_root
    # (a second signal must not cut the teardown short: ignored in it)
    trap 'trap "" INT TERM; teardown' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    bring_up "$n" || exit 1
    trap - EXIT INT TERM
    # the bed outlives this process: owned by nobody alive ('clean' would
    # remove it), so record the parent shell as its owner
    echo "$PPID" >"$dir/owner"
    echo "$bed_id"
}

cmd_run() {
    local n=2 limit="" losses=() l rc start cmd_pid
    while [ $# -gt 0 ]; do
        case "$1" in
            -n) n=$2; shift 2 ;;
            -l) losses+=("$2"); shift 2 ;;
            -t) limit=$2; shift 2 ;;
            --) shift; break ;;
            *)  die "run: unknown argument '$1'" ;;
        esac
    done
    [ $# -gt 0 ] || die "run: no command (run [-n N] [-l LOSS] -- CMD...)"
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
        die "bad number of hosts '$n'"
    need_root
    cmd_pid=""
    # teardown on every exit; a signal first stops the command; a second
    # signal (timeout signals the whole process group, ^C twice) must not
    # cut the teardown short: ignored in it
    trap 'rc=$?; trap "" INT TERM; stop_cmd; teardown; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    bring_up "$n" || exit 1
    for l in "${losses[@]}"; do
        IFS=, read -r -a f <<<"$l"
        [ ${#f[@]} -ge 3 ] || die "bad -l '$l' (HOST,PCT,SPEC[,SPEC...])"
        set_loss "${f[@]}"
    done
    start=$(now)
    # in the background, so that a signal is handled at once
    if [ -n "$limit" ]; then
        run_in_bed head timeout -k 10 "$limit" "$@" &
    else
        run_in_bed head "$@" &
    fi
    cmd_pid=$!
    wait "$cmd_pid"
    rc=$?
    cmd_pid=""
    say "command exited with $rc after $(since "$start") s"
    exit $rc
}

# SIGTERM to the command (mpirun ends its job), bounded, before teardown
stop_cmd() {
    local i
    [ -n "${cmd_pid:-}" ] || return 0
    kill -TERM "$cmd_pid" 2>/dev/null
    for i in $(seq 50); do
        kill -0 "$cmd_pid" 2>/dev/null || break
        sleep 0.1
    done
}

cmd_exec() {
    local where=head
    [ $# -ge 1 ] || die "exec ID [HOST] -- CMD..."
    need_root
    load_bed "$1"; shift
    if [ $# -gt 0 ] && [ "$1" != -- ]; then where=$1; shift; fi
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || die "exec: no command"
    [ "$where" = head ] || valid_host "$where" ||
        die "no host '$where' in bed $bed_id (hosts: $hosts)"
    run_in_bed "$where" "$@"
}

cmd_loss() {
    [ $# -ge 3 ] || die "loss ID HOST PCT SPEC... | loss ID HOST off"
    need_root
    load_bed "$1"; shift
    set_loss "$@"
}

cmd_stats() {
    [ $# -eq 1 ] || die "stats ID"
    need_root
    load_bed "$1"
    show_stats
}

cmd_down() {
    [ $# -eq 1 ] || die "down ID"
    need_root
    load_bed "$1"
    teardown
}

cmd_clean() {
    local d owner
    need_root
    for d in "$base"/o2m*; do
        [ -f "$d/owner" ] || continue
        owner=$(cat "$d/owner")
        kill -0 "$owner" 2>/dev/null && continue
        load_bed "$(basename "$d")"
        teardown
    done
}

sub=${1:-}
[ $# -gt 0 ] && shift
case "$sub" in
    run)   cmd_run "$@" ;;
    up)    cmd_up "$@" ;;
    exec)  cmd_exec "$@" ;;
    loss)  cmd_loss "$@" ;;
    stats) cmd_stats "$@" ;;
    down)  cmd_down "$@" ;;
    clean) cmd_clean ;;
    check) cmd_check ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
esac
