#!/bin/bash
#
# Self-test of the multi-host bed (contrib/multihost.sh), as root:
#   - every host has its own hostname and network, IPC, mount and pid
#     namespaces (none shared with another host or with the head), and a
#     /dev/shm file made on one host is not seen on another;
#   - a host has no route out of the bed (a send to 192.0.2.1 fails);
#   - UDP unicast and IP multicast cross the bridge; the loss rules drop
#     what they match and count it (100 % of h3's UDP port 6000 dropped,
#     30 % of h2's multicast: some lost, not all), and nothing else;
#   - teardown leaves nothing (namespaces, /etc/netns entries, state
#     directory, processes) after a normal end, a failed bring-up and
#     SIGTERM.
# Prints one line per check; exits 0 when all pass, 1 otherwise, 77 when
# the bed cannot be made here.  Every wait is bounded.
#
#   test/multihost/selftest.sh
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
bed="$(cd "$here/../.." && pwd)/contrib/multihost.sh"
state_base=${MULTIHOST_STATE_DIR:-/run/ucx-o2m-multihost}

# UDP sender/receiver, run on the hosts
udp_py='
import socket, struct, sys, time
mode, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if mode == "recv":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("", port))
    if addr != "any":
        mreq = struct.pack("4s4s", socket.inet_aton(addr),
                           socket.inet_aton("0.0.0.0"))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    open(sys.argv[5], "w").close()          # ready
    s.settimeout(5)
    got = 0
    try:
        while True:
            if s.recv(64) == b"end":
                break
            got += 1
    except socket.timeout:
        pass
    print(got)
else:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    for i in range(n):
        s.sendto(b"d", (addr, port))
        if i % 20 == 0:
            time.sleep(0.002)               # no receive-buffer overrun
    time.sleep(0.2)
    for i in range(20):                     # survives 30 % loss
        s.sendto(b"end", (addr, port))
'

fail=0
pass() { echo "selftest: ok:   $*"; }
flunk() { echo "selftest: FAIL: $*"; fail=1; }

# --- inside the bed (run by 'multihost.sh run') ---
if [ "${1:-}" = --inside ]; then
    ex() { "$bed" exec "$MULTIHOST_ID" "$@"; }
    tmp=$(mktemp -d "$MULTIHOST_DIR/selftest.XXXXXX")
    # for the teardown check outside: the hosts' init processes
    awk '{ print $2 }' "$MULTIHOST_DIR/inits" >"$SELFTEST_INITS"
    ns_of() { ex "$1" -- readlink "/proc/self/ns/$2"; }

    for h in h1 h2 h3; do
        name=$(ex $h -- cat /proc/sys/kernel/hostname)
        [ "$name" = "$h" ] && pass "$h: hostname $name" ||
            flunk "$h: hostname '$name'"
    done
    # the caller's (outside the bed), the hosts' and, for net, the head's
    for ns in net uts ipc mnt pid; do
        v=SELFTEST_NS_$ns
        vals="${!v} $(ns_of h1 "$ns")"
        vals+=" $(ns_of h2 "$ns") $(ns_of h3 "$ns")"
        [ "$ns" = net ] && vals+=" $(ns_of head "$ns")"
        n=$(tr ' ' '\n' <<<"$vals" | sort -u | wc -l)
        [ "$n" -eq "$(wc -w <<<"$vals")" ] &&
            pass "$ns namespaces all different ($vals)" ||
            flunk "$ns namespaces shared: $vals"
    done
    ex h1 -- sh -c 'echo x >/dev/shm/o2m-selftest'
    if ex h2 -- test -e /dev/shm/o2m-selftest ||
       [ -e /dev/shm/o2m-selftest ]; then
        flunk "h1's /dev/shm file is seen on h2 or on the machine"
    else
        pass "h1's /dev/shm is its own"
    fi
    if ex h1 -- python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("192.0.2.1", 9))' 2>/dev/null; then
        flunk "h1 could send to 192.0.2.1 (a route out of the bed)"
    else
        pass "h1 has no route out of the bed"
    fi

    # recv HOST GROUP|any PORT TAG: a receiver in the background, ready
    recv() {
        timeout -k 5 30 "$bed" exec "$MULTIHOST_ID" "$1" -- \
            python3 -c "$udp_py" recv "$2" "$3" 0 "$tmp/ready.$4" \
            >"$tmp/got.$4" 2>&1 &
        for i in $(seq 100); do
            [ -e "$tmp/ready.$4" ] && return 0
            sleep 0.1
        done
        return 1
    }
    send() { ex "$1" -- python3 -c "$udp_py" send "$2" "$3" "$4"; }
    sent=500
    sub=${MULTIHOST_SUBNET%.0/24}

    recv h2 239.1.2.3 5000 m2 && recv h3 239.1.2.3 5000 m3 &&
        recv h3 any 6000 u3 && recv h2 any 6000 u2 ||
        flunk "receivers not ready"
    send h1 239.1.2.3 5000 $sent
    send h1 "$sub.3" 6000 $sent
    send h1 "$sub.2" 6000 $sent
    wait
    m2=$(cat "$tmp/got.m2"); m3=$(cat "$tmp/got.m3")
    u2=$(cat "$tmp/got.u2"); u3=$(cat "$tmp/got.u3")
    # no rule: all but receive-buffer overruns (the sender is paced)
    [ "$m3" -ge $((sent * 9 / 10)) ] 2>/dev/null &&
        pass "multicast h1 -> h3: $m3 of $sent" ||
        flunk "multicast h1 -> h3 (no loss rule): $m3 of $sent"
    [ "$u2" -ge $((sent * 9 / 10)) ] 2>/dev/null &&
        pass "unicast h1 -> h2: $u2 of $sent" ||
        flunk "unicast h1 -> h2 (no loss rule): $u2 of $sent"
    [ "$u3" = 0 ] && pass "unicast h1 -> h3 port 6000, 100 % loss: 0" ||
        flunk "unicast h1 -> h3 port 6000 with 100 % loss: $u3 received"
    [ "$m2" -gt 0 ] 2>/dev/null && [ "$m2" -lt "$sent" ] &&
        pass "multicast h1 -> h2, 30 % loss: $m2 of $sent" ||
        flunk "multicast h1 -> h2 with 30 % loss: $m2 of $sent"
    stats=$("$bed" stats "$MULTIHOST_ID")
    drops=$(awk '/^== h2/ { h = 1 } /^== h3/ { h = 0 }
                 h && /224.0.0.0/ { for (i = 1; i < NF; ++i)
                                    if ($i == "packets") print $(i + 1) }' \
            <<<"$stats")
    [ -n "$drops" ] && [ "$drops" -gt 0 ] && [ "$drops" -le $((sent + 20)) ] &&
        pass "h2's multicast rule counted $drops drops" ||
        flunk "h2's multicast rule counted '$drops' drops"
    rm -rf "$tmp"
    exit $fail
fi

# --- outside: make beds, check what they leave ---
if ! "$bed" check; then
    echo "selftest: SKIPPED: cannot make the multi-host bed here"
    exit 77
fi

# leftovers BED_ID [INIT_PIDS_FILE]: what is left of a bed (empty:
# nothing); its hosts' inits are found by pid and command line
leftovers() {
    local id=$1 pid
    ip netns list 2>/dev/null | grep "^$id-" | sed 's/^/netns /'
    ls -d /etc/netns/"$id"-* 2>/dev/null
    ls -d "$state_base/$id" 2>/dev/null
    [ -n "${2:-}" ] || return 0
    for pid in $(cat "$2"); do
        grep -qs waitpid "/proc/$pid/cmdline" && echo "init process $pid"
    done
}

# bed_id LOG: the id of the bed whose bring-up LOG shows
bed_id() { sed -n 's/^multihost: bed \(o2m[0-9-]*\) up .*/\1/p' "$1" | head -1; }

for ns in net uts ipc mnt pid; do
    export "SELFTEST_NS_$ns=$(readlink "/proc/self/ns/$ns")"
done
log=$(mktemp)
export SELFTEST_INITS=$(mktemp)
timeout -k 10 120 "$bed" run -n 3 -l h2,30,mcast:5000-5100 \
    -l h3,100,udp:6000 -- "$here/selftest.sh" --inside 2>"$log"
rc=$?
grep -v '^multihost: bed' "$log" | grep -v '^multihost: host\|^multihost: command'
id=$(bed_id "$log")
[ $rc -eq 0 ] || flunk "the checks inside the bed (rc $rc)"
[ -n "$id" ] && [ "$(wc -l <"$SELFTEST_INITS")" = 3 ] &&
    [ -z "$(leftovers "$id" "$SELFTEST_INITS")" ] &&
    pass "bed $id: nothing left after a normal end" ||
    flunk "bed '$id' left: $(leftovers "$id" "$SELFTEST_INITS")"
rm -f "$SELFTEST_INITS"

# a failed bring-up (a loss rule for a host that does not exist)
timeout -k 10 60 "$bed" run -n 2 -l h9,10,udp -- true 2>"$log"
rc=$?
id=$(bed_id "$log")
[ $rc -ne 0 ] && [ -n "$id" ] && [ -z "$(leftovers "$id")" ] &&
    pass "bed $id: an error in the bring-up fails (rc $rc), nothing left" ||
    flunk "failed bring-up: rc $rc, bed '$id' left: $(leftovers "$id")"

# SIGTERM while a job runs
timeout -k 10 120 "$bed" run -n 2 -- mpirun --allow-run-as-root \
    --oversubscribe --host h1:1,h2:1 -np 2 sleep 100 >/dev/null 2>"$log" &
pid=$!
# started once h1 and h2 have more than their init (orted, the rank)
started() {
    local h
    [ -n "$1" ] || return 1
    for h in h1 h2; do
        [ "$(ip netns pids "$1-$h" 2>/dev/null | wc -l)" -gt 3 ] || return 1
    done
}
for i in $(seq 200); do
    id=$(bed_id "$log")
    started "$id" && break
    sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] && [ -n "$id" ] && [ -z "$(leftovers "$id")" ] &&
    pass "bed $id: SIGTERM during a job ends it (rc $rc), nothing left" ||
    flunk "SIGTERM: rc $rc, bed '$id' left: $(leftovers "$id")"

rm -f "$log"
echo "selftest: $([ $fail = 0 ] && echo PASSED || echo FAILED)"
exit $fail
