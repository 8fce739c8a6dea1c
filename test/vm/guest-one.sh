#!/bin/bash
#
# Runs inside one guest of the VM bed (test/vm/selftest.sh starts it with
# 'contrib/vmbed.sh run -n 1'): the bed's environment, then the verbs
# device rxe0 end to end:
#   - VMBED_* set, VMBED_SCRATCH writable, the host's files readable at
#     their host paths and writable only in the guest (VMBED_TEST_PROBE, a
#     file the host made, is overwritten here; the host checks it did not
#     change);
#   - ibv_devices lists rxe0, its port 1 is ACTIVE with a RoCE v2 GID;
#   - ucx_info -d lists ud_verbs on rxe0:1;
#   - ibv_ud_pingpong between two processes over rxe0 with the received
#     buffers checked (--chk);
#   - UCX tag messages between two processes over ud_verbs only
#     (ucx_perftest tag_lat 8 B and tag_bw 64 KiB): every iteration done.
# Prints one line per check; exits 0 when all pass.  Every wait bounded.
#
set -u
prog=guest-one
. "$(dirname "$0")/common.sh"

# --- the bed ---
if [ "${VMBED_INDEX:-}" = 0 ] && [ "${VMBED_N:-}" = 1 ] &&
   [ "${VMBED_ADDR:-}" = 10.77.0.1 ] && [ "${VMBED_PEER_ADDR-unset}" = "" ] &&
   [ "${VMBED_DEV:-}" = rxe0 ] && [ "$(hostname)" = vm0 ]; then
    pass "environment: index 0 of 1, $VMBED_ADDR, $VMBED_DEV, host vm0"
else
    flunk "environment: index '${VMBED_INDEX:-}' n '${VMBED_N:-}'" \
        "addr '${VMBED_ADDR:-}' peer '${VMBED_PEER_ADDR-unset}'" \
        "dev '${VMBED_DEV:-}' host '$(hostname)'"
fi
if [ -n "${VMBED_SCRATCH:-}" ] && [ -d "$s" ] && [ -z "$(ls -A "$s")" ] &&
   echo data >"$s/f" && [ "$(cat "$s/f")" = data ]; then
    pass "scratch $s empty and writable"
else
    flunk "scratch '${VMBED_SCRATCH:-}'"
fi
if [ "$(id -u)" = 0 ] && [ "$PWD" = "${VMBED_TEST_CWD:-}" ]; then
    pass "root, in the host's directory $PWD"
else
    flunk "uid $(id -u), cwd $PWD (expected ${VMBED_TEST_CWD:-?})"
fi
probe=${VMBED_TEST_PROBE:-}
if [ -n "$probe" ] && [ "$(cat "$probe")" = host ] &&
   echo guest >"$probe" && [ "$(cat "$probe")" = guest ]; then
    pass "host file $probe read, overwritten in the guest's overlay"
else
    flunk "host file '$probe' not read or not writable in the guest"
fi

# --- the verbs device ---
if timeout "$step" ibv_devices |
        awk '$1 == "rxe0" { f = 1 } END { exit !f }'; then
    pass "ibv_devices lists rxe0"
else
    flunk "ibv_devices does not list rxe0"
fi
info=$(timeout "$step" ibv_devinfo -d rxe0 -v 2>&1)
if grep -q 'state:.*PORT_ACTIVE' <<<"$info" &&
   grep -q 'GID\[ *1\]:.*RoCE v2' <<<"$info"; then
    pass "rxe0 port 1 ACTIVE, GID 1 is RoCE v2"
else
    flunk "rxe0 port state or GID 1:"
    grep -E 'state:|GID' <<<"$info"
fi
if timeout "$step" ucx_info -d 2>/dev/null | awk '
        /Transport: ud_verbs$/ { t = 1; next }
        t && /Device:/ { if ($NF == "rxe0:1") f = 1; t = 0 }
        END { exit !f }'; then
    pass "ucx_info -d lists ud_verbs on rxe0:1"
else
    flunk "ucx_info -d does not list ud_verbs on rxe0:1"
fi

# ibv_ud_pingpong: a server and a client on rxe0, buffers checked
timeout "$step" ibv_ud_pingpong -d rxe0 -g 1 -p 18515 -n 200 -s 1024 -c \
    >"$s/udpp.srv" 2>&1 &
srv=$!
client "$s/udpp.cli" ibv_ud_pingpong -d rxe0 -g 1 -p 18515 -n 200 -s 1024 \
    -c 127.0.0.1
c=$?
wait $srv
sv=$?
if [ $c -eq 0 ] && [ $sv -eq 0 ] &&
   grep -q '200 iters' "$s/udpp.cli" && grep -q '200 iters' "$s/udpp.srv"; then
    pass "ibv_ud_pingpong: 200 x 1 KiB each way, buffers checked"
else
    flunk "ibv_ud_pingpong: client rc=$c server rc=$sv"
    cat "$s/udpp.srv" "$s/udpp.cli"
fi

# UCX tag messages over ud_verbs only (no shared memory, no TCP)
perf() {
    local port=$1 iters=$2 srv c sv done
    shift 2
    timeout "$step" ucx_perftest -p "$port" >"$s/perf.srv" 2>&1 &
    srv=$!
    client "$s/perf.cli" ucx_perftest 127.0.0.1 -p "$port" -n "$iters" \
        -w 20 "$@"
    c=$?
    wait $srv
    sv=$?
    done=$(awk '$1 == "Final:" { print $2 }' "$s/perf.cli")
    if [ $c -eq 0 ] && [ $sv -eq 0 ] && [ "$done" = "$iters" ]; then
        pass "ucx_perftest $* over ud_verbs: $done iterations"
    else
        flunk "ucx_perftest $*: client rc=$c server rc=$sv," \
            "iterations '$done' of $iters"
        tail -n 5 "$s/perf.srv" "$s/perf.cli"
    fi
}
export UCX_TLS=ud_verbs UCX_NET_DEVICES=rxe0:1 UCX_UD_VERBS_ETH_DGID_CHECK=n
perf 13401 1000 -t tag_lat -s 8
perf 13402 200 -t tag_bw -s 65536

[ $fail -eq 0 ] && echo "$prog: all passed"
exit $fail
