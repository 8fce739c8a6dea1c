#!/bin/bash
#
# Runs in both guests of the VM bed (test/vm/selftest.sh starts it with
# 'contrib/vmbed.sh run -n 2'); vm0 receives/serves, vm1 sends/connects:
#   - VMBED_* and vmbed-sync: the guests exchange values;
#   - vmbed-exec from vm0 runs a command in vm1 (output, status), and
#     mpirun --host vm0:1,vm1:1 starts a rank in each guest;
#   - RDMA-CM multicast across the guests: mckey on vm0 joins 239.77.0.1,
#     vm1 sends 300 x 512 B to the group, vm0 receives 100 of them (UD
#     multicast is unreliable: rxe drops the first sends while it resolves
#     the address vector, and mckey's receiver waits for its count);
#   - ibv_ud_pingpong across the guests with the buffers checked (--chk);
#   - UCX tag messages across the guests over ud_verbs only (ucx_perftest
#     tag_lat 8 B, tag_bw 64 KiB): every iteration done.
# Prints one line per check; exits 0 when all of this guest's checks pass.
# Every wait bounded; the guests meet at named barriers.
#
set -u
prog=guest-pair
. "$(dirname "$0")/common.sh"
i=${VMBED_INDEX:-x}
sync_() { vmbed-sync barrier "$1" -t "$step" || flunk "barrier $1"; }

# --- the bed ---
me=10.77.0.$((i + 1)) peer=10.77.0.$((2 - i))
if [ "${VMBED_N:-}" = 2 ] && [ "${VMBED_ADDR:-}" = "$me" ] &&
   [ "${VMBED_PEER_ADDR:-}" = "$peer" ] && [ "$(hostname)" = "vm$i" ]; then
    pass "environment: vm$i of 2, $VMBED_ADDR, peer $VMBED_PEER_ADDR"
else
    flunk "environment: index '$i' n '${VMBED_N:-}' addr '${VMBED_ADDR:-}'" \
        "peer '${VMBED_PEER_ADDR:-}' host '$(hostname)'"
fi
got=$(vmbed-sync xchg "from-vm$i" -t "$step")
if [ "$got" = "from-vm$((1 - i))" ]; then
    pass "vmbed-sync xchg: got '$got'"
else
    flunk "vmbed-sync xchg: got '$got'"
fi

# --- vmbed-exec and Open MPI across the guests (vm0 launches) ---
if [ "$i" = 0 ]; then
    got=$(timeout "$step" vmbed-exec vm1 \
        'echo $(cat /proc/sys/kernel/hostname) here; exit 3')
    rc=$?
    if [ "$got" = "vm1 here" ] && [ $rc -eq 3 ]; then
        pass "vmbed-exec vm1: output and status 3 returned"
    else
        flunk "vmbed-exec vm1: got '$got' rc=$rc"
    fi
    got=$(timeout "$step" mpirun --allow-run-as-root --host vm0:1,vm1:1 \
        -np 2 cat /proc/sys/kernel/hostname 2>"$s/mpirun.err" |
        sort | tr '\n' ' ')
    if [ "$got" = "vm0 vm1 " ]; then
        pass "mpirun --host vm0:1,vm1:1: a rank in each guest"
    else
        flunk "mpirun across the guests: got '$got'"
        cat "$s/mpirun.err"
    fi
fi
sync_ exec-done

# --- RDMA-CM multicast, vm1 -> vm0 ---
grp=239.77.0.1
if [ "$i" = 0 ]; then
    # (line-buffered: its "receiving" line says it has joined)
    timeout "$step" stdbuf -oL mckey -m $grp -b "$VMBED_ADDR" -C 100 -S 512 \
        >"$s/mckey" 2>&1 &
    r=$!
    wait_for "$s/mckey" 'receiving data transfers' $r ||
        flunk "mckey receiver did not join $grp"
    sync_ mckey-joined
    wait $r
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'data transfers complete' "$s/mckey"; then
        pass "mckey: 100 x 512 B of vm1's 300 received on $grp"
    else
        flunk "mckey receiver rc=$rc"
        cat "$s/mckey"
    fi
else
    sync_ mckey-joined
    if timeout "$step" mckey -m $grp -b "$VMBED_ADDR" -s -C 300 -S 512 \
            >"$s/mckey" 2>&1; then
        pass "mckey: 300 x 512 B sent to $grp"
    else
        flunk "mckey sender"
        cat "$s/mckey"
    fi
fi
sync_ mckey-done

# --- ibv_ud_pingpong, buffers checked ---
if [ "$i" = 0 ]; then
    timeout "$step" ibv_ud_pingpong -d rxe0 -g 1 -p 18515 -n 100 -s 1024 -c \
        >"$s/udpp" 2>&1 &
    r=$!
    sync_ udpp-up
    wait $r
else
    sync_ udpp-up
    client "$s/udpp" ibv_ud_pingpong -d rxe0 -g 1 -p 18515 -n 100 -s 1024 \
        -c "$VMBED_PEER_ADDR"
fi
rc=$?
if [ $rc -eq 0 ] && grep -q '100 iters' "$s/udpp"; then
    pass "ibv_ud_pingpong across the guests: 100 x 1 KiB, buffers checked"
else
    flunk "ibv_ud_pingpong rc=$rc"
    cat "$s/udpp"
fi
sync_ udpp-done

# --- UCX tag messages over ud_verbs ---
export UCX_TLS=ud_verbs UCX_NET_DEVICES=rxe0:1 UCX_UD_VERBS_ETH_DGID_CHECK=n
perf() {
    local port=$1 iters=$2 rc done r
    shift 2
    if [ "$i" = 0 ]; then
        timeout "$step" ucx_perftest -p "$port" >"$s/perf" 2>&1 &
        r=$!
        sync_ "perf-$port"
        wait $r
        rc=$?
        if [ $rc -eq 0 ]; then
            pass "ucx_perftest server $*"
        else
            flunk "ucx_perftest server $* rc=$rc"
            tail -n 5 "$s/perf"
        fi
    else
        sync_ "perf-$port"
        client "$s/perf" ucx_perftest "$VMBED_PEER_ADDR" -p "$port" \
            -n "$iters" -w 10 "$@"
        rc=$?
        done=$(awk '$1 == "Final:" { print $2 }' "$s/perf")
        if [ $rc -eq 0 ] && [ "$done" = "$iters" ]; then
            pass "ucx_perftest $* across the guests over ud_verbs:" \
                "$done iterations"
        else
            flunk "ucx_perftest $*: rc=$rc, iterations '$done' of $iters"
            tail -n 5 "$s/perf"
        fi
    fi
}
perf 13411 200 -t tag_lat -s 8
perf 13412 50 -t tag_bw -s 65536

[ $fail -eq 0 ] && echo "$prog: all passed"
exit $fail
