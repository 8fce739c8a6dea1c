# Sourced by the guest scripts of test/vm/: checks, bounded waits and
# clients that retry until their server listens.  Guests under TCG on a
# loaded machine are slow (a fork can take a second): every wait is long
# and bounded, none is a timing assertion.
fail=0
pass()  { echo "$prog: ok:   $*"; }
flunk() { echo "$prog: FAIL: $*"; fail=1; }
s=${VMBED_SCRATCH:-/tmp}
# bound of one step, seconds
step=${VMBED_TEST_STEP:-240}

# wait_for FILE TEXT PID: until FILE has TEXT (0), PID ended or $step
# seconds passed (1)
wait_for() {
    local f=$1 text=$2 pid=$3 end=$((SECONDS + step)) lines
    while [ $SECONDS -lt $end ]; do
        mapfile -t lines 2>/dev/null <"$f"
        [[ "${lines[*]}" == *"$text"* ]] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

# client OUT CMD...: run a client into OUT, again while it could not
# connect (its server is still starting), for at most $step seconds
client() {
    local out=$1 end=$((SECONDS + step)) rc
    shift
    while :; do
        timeout "$step" "$@" >"$out" 2>&1
        rc=$?
        [ $rc -ne 0 ] && [ $SECONDS -lt $end ] &&
            grep -qiE "couldn't connect|connection refused|connect\(\) failed" \
                "$out" || return $rc
        sleep 1
    done
}
