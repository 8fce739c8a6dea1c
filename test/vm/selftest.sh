#!/bin/bash
#
# Self-test of the Soft-RoCE VM bed (contrib/vmbed.sh):
#   1. one guest: test/vm/guest-one.sh (environment, scratch, the host's
#      files read-only, rxe0 in ibv_devices and ucx_info -d with ud_verbs,
#      ibv_ud_pingpong with checked buffers, ucx_perftest over ud_verbs
#      between two processes); its lines come back prefixed "[vm0] ", and
#      the host file it overwrote in its overlay is unchanged on the host;
#   2. two guests: test/vm/guest-pair.sh (vmbed-sync, RDMA-CM multicast
#      with mckey from vm1 to vm0, ibv_ud_pingpong and ucx_perftest across
#      the guests);
#   3. the first failure is the run's status: vm1 exits 7, vm0 sleeps ->
#      the run exits 7 and vm0 is stopped without waiting for the timeout;
#   4. a command that outlives --timeout: the run exits 124;
#   5. SIGTERM to a run of two guests while their command runs: it exits
#      143;
#   6. guests that stay up: 'up -n 2', 'exec' in vm1 (output, status, the
#      host's directory) and in vm0 through vmbed-exec to vm1, 'down';
# and after every run nothing of it is left: no process naming its run
# directory (QEMU), no run directory.
# Prints one line per check; exits 0 when all pass, 1 otherwise, 77 when
# the bed cannot run here ('contrib/vmbed.sh check' says why).  Every wait
# is bounded.
#
#   test/vm/selftest.sh
#
# VMBED_TEST_TIMEOUT (600): --timeout of each run; VMBED_TEST_STEP (240):
# the bound of one step inside the guests (test/vm/common.sh).
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
bed="$(cd "$here/../.." && pwd)/contrib/vmbed.sh"
tmo=${VMBED_TEST_TIMEOUT:-600}
step=${VMBED_TEST_STEP:-240}
fail=0
pass()  { echo "selftest: ok:   $*"; }
flunk() { echo "selftest: FAIL: $*"; fail=1; }

if ! bash "$bed" check; then
    echo "selftest: SKIP: the VM bed cannot run here"
    exit 77
fi

tmp=$(mktemp -d /tmp/ucx-o2m-vmtest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Nothing of the run whose output is $1 remains
check_left() {
    local out=$1 what=$2 dir p left=""
    dir=$(sed -n 's/^vmbed: booting .* run \([^,]*\),.*/\1/p' "$out" | head -n 1)
    if [ -z "$dir" ]; then
        flunk "$what: no run directory in its output"
        return
    fi
    for p in /proc/[0-9]*; do
        grep -qF "$dir" "$p/cmdline" 2>/dev/null && left+=" ${p#/proc/}"
    done
    if [ -n "$left" ] || [ -e "$dir" ]; then
        flunk "$what: left behind: processes [$left ], directory" \
            "$([ -e "$dir" ] && echo "$dir" || echo none)"
    else
        pass "$what: nothing left ($dir and its QEMU gone)"
    fi
}

# 1. one guest
echo host >"$tmp/probe"
start=$SECONDS
(cd "$here" && timeout -k 10 $((tmo + 60)) bash "$bed" run -n 1 \
    --timeout "$tmo" -- env VMBED_TEST_PROBE="$tmp/probe" \
    VMBED_TEST_CWD="$here" VMBED_TEST_STEP="$step" \
    bash "$here/guest-one.sh") >"$tmp/one" 2>&1
rc=$?
cat "$tmp/one"
if [ $rc -eq 0 ] && grep -q '^\[vm0\] guest-one: all passed$' "$tmp/one"; then
    pass "one guest: guest-one.sh passed ($((SECONDS - start)) s)"
else
    flunk "one guest: rc=$rc"
fi
[ "$(cat "$tmp/probe")" = host ] && pass "the host's file is unchanged" ||
    flunk "the guest changed the host's file $tmp/probe"
check_left "$tmp/one" "one guest"

# 2. two guests
start=$SECONDS
timeout -k 10 $((tmo + 60)) bash "$bed" run -n 2 --timeout "$tmo" -- \
    env VMBED_TEST_STEP="$step" bash "$here/guest-pair.sh" >"$tmp/pair" 2>&1
rc=$?
cat "$tmp/pair"
if [ $rc -eq 0 ] && grep -q '^\[vm0\] guest-pair: all passed$' "$tmp/pair" &&
   grep -q '^\[vm1\] guest-pair: all passed$' "$tmp/pair"; then
    pass "two guests: guest-pair.sh passed in both ($((SECONDS - start)) s)"
else
    flunk "two guests: rc=$rc"
fi
check_left "$tmp/pair" "two guests"

# 3. the first failure wins, the other guest is stopped
timeout -k 10 $((tmo + 60)) bash "$bed" run -n 2 --smp 1 --timeout "$tmo" -- \
    bash -c 'if [ "$VMBED_INDEX" = 1 ]; then echo failing; exit 7; fi
             echo sleeping; exec sleep 100000' >"$tmp/rc" 2>&1
rc=$?
cat "$tmp/rc"
if [ $rc -eq 7 ] && grep -q '^\[vm1\] failing$' "$tmp/rc" &&
   grep -q 'stopping vm0' "$tmp/rc" && ! grep -q 'timeout:' "$tmp/rc"; then
    pass "vm1's exit 7 is the run's status, vm0 stopped before the timeout"
else
    flunk "first failure: rc=$rc (expected 7, vm0 stopped)"
fi
check_left "$tmp/rc" "a failed guest"

# 4. --timeout
timeout -k 10 300 bash "$bed" run -n 1 --smp 1 --timeout 40 -- \
    sleep 100000 >"$tmp/tmo" 2>&1
rc=$?
cat "$tmp/tmo"
[ $rc -eq 124 ] && pass "a command beyond --timeout: exit 124" ||
    flunk "a command beyond --timeout: rc=$rc (expected 124)"
check_left "$tmp/tmo" "a timeout"

# 5. SIGTERM
bash "$bed" run -n 2 --smp 1 --timeout "$tmo" -- \
    bash -c 'echo started; exec sleep 100000' >"$tmp/term" 2>&1 &
pid=$!
for k in $(seq $((tmo * 5))); do
    [ "$(grep -c '^\[vm.\] started$' "$tmp/term")" -eq 2 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
done
kill -TERM $pid 2>/dev/null
for k in $(seq 150); do
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
done
if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    flunk "SIGTERM: the run did not end within 30 s"
fi
wait $pid
rc=$?
cat "$tmp/term"
[ $rc -eq 143 ] && pass "SIGTERM during the command: exit 143" ||
    flunk "SIGTERM: rc=$rc (expected 143)"
check_left "$tmp/term" "SIGTERM"

# 6. guests that stay up: up, exec in each, down
id=$(timeout -k 10 $((tmo + 60)) bash "$bed" up -n 2 --smp 1 --timeout "$tmo" \
    2>"$tmp/up.err")
rc=$?
cat "$tmp/up.err"
if [ $rc -eq 0 ] && [[ $id == vmbed.* ]]; then
    pass "up -n 2: bed $id"
    got=$(cd "$here" && timeout -k 10 $((tmo + 60)) bash "$bed" exec "$id" vm1 \
        --timeout "$tmo" -- bash -c 'echo "$(hostname) $PWD"; exit 5')
    rc=$?
    [ "$got" = "vm1 $here" ] && [ $rc -eq 5 ] &&
        pass "exec vm1: output '$got' and status 5" ||
        flunk "exec vm1: got '$got' rc=$rc"
    got=$(timeout -k 10 $((tmo + 60)) bash "$bed" exec "$id" --timeout "$tmo" \
        -- vmbed-exec vm1 cat /proc/sys/kernel/hostname)
    rc=$?
    [ "$got" = vm1 ] && [ $rc -eq 0 ] &&
        pass "exec vm0 -- vmbed-exec vm1: '$got'" ||
        flunk "exec vm0 -- vmbed-exec vm1: got '$got' rc=$rc"
    dir=$(sed -n 's/^vmbed: booting .* bed \(.*\))$/\1/p' "$tmp/up.err")
    timeout -k 10 120 bash "$bed" down "$id"
    rc=$?
    left=""
    for p in /proc/[0-9]*; do
        grep -qF "$dir" "$p/cmdline" 2>/dev/null && left+=" ${p#/proc/}"
    done
    if [ $rc -eq 0 ] && [ -n "$dir" ] && [ ! -e "$dir" ] && [ -z "$left" ]; then
        pass "down: nothing left ($dir and its QEMU gone)"
    else
        flunk "down: rc=$rc, left: processes [$left ], directory '$dir'"
    fi
else
    flunk "up -n 2: rc=$rc, id '$id'"
fi

[ $fail -eq 0 ] && echo "selftest: all passed"
exit $fail
