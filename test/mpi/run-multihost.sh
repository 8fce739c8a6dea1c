#!/bin/bash
#
# The MPI suite across "hosts" of the multi-host bed (contrib/multihost.sh:
# network, UTS, IPC, mount and pid namespaces per host): coll_test for
# several hosts x ranks-per-host layouts, and, with coll/ucg, a rank killed
# during a collective (coll_kill).  Every mpirun is bounded by `timeout`.
#
# Usage: test/mpi/run-multihost.sh [-L "2x1 2x2 3x1 3x2"] [-q] [-x] [-r] [-k]
#            [-t SECONDS] [-b] [--mc] [--loss PCT] [--ucg-path DIR]
#            [--build-dir DIR] [-- MPIRUN_ARGS...]
#   -L LIST   layouts HOSTSxRANKS (default "2x1 2x2 3x1 3x2"): run.sh with
#             np = HOSTS*RANKS and --host h1:RANKS,...,hHOSTS:RANKS
#   -q        quick coll_test matrix (run.sh -q)
#   -x        no run.sh extra tests (late_rank, comm_churn, coll_fault;
#             otherwise run once, on the first layout of 3 ranks or more)
#   -r        with -x: still the MPMD case of differing tuning rules files
#             (run.sh -R: 3 ranks, rank 0 with another coll_ucg_rules_file;
#             with coll/ucg), on the first layout of 3 ranks or more; on
#             2x2 its ranks are [0,1][2] and the 400 KB bcasts of root 2
#             cross hosts (with --mc on multicast: it hung there before UCG
#             agreed on its settings)
#   -k        no coll_kill
#   -t SEC    time limit per mpirun (default 180)
#   -b        also the OSU-style benchmark on every layout (coll_bench: bcast,
#             allreduce, 8 B to 64 KiB, and barrier, few iterations; its untimed
#             last call of each size checks the data): a table per layout,
#             under the same loss and multicast settings; it fails on a
#             wrong result, an error or the time limit, never on a time
#   --ucg-path, --build-dir, after --: as for run.sh (MPI_TEST_EXPECT_UCG=1 also applies)
#   --mc      UCG's broadcasts between host leaders on mc_udp (UCX_UCG_MC=yes),
#             and proof that it carried them (run.sh's MPI_TEST_EXPECT_MC)
#   --loss P  every host drops P % of the UDP packets it receives (mc_udp's
#             multicast and control; UCP's tcp is not touched); with --mc,
#             some member must have sent NACKs (MPI_TEST_EXPECT_NACKS)
#
# Outside a bed it brings one up for the largest layout (as root; exits 77
# with a message when namespaces cannot be made here) and tears it down
# at the end.
#
# coll_kill (with MPI_TEST_EXPECT_UCG=1, unless -k): the victim kills itself
# during an allgather loop; every other rank must get an error within
# KILL_BOUND s (60, against hangs only).  Cases: 3 hosts x 1 rank (every
# survivor on another host: UCP's error handling), and 2 hosts x 2 ranks
# with the victim a host leader and a host member (same-host survivors
# through the sm transports' liveness watches); with --mc also a bcast
# loop (host leaders on mc_udp) with a host leader killed, on 3 x 1 and
# 2 x 2.  The time from the kill to each survivor's error is printed.
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
layouts="2x1 2x2 3x1 3x2"
loss=0
quick=()
extra_tests=1
rules_case=0
kill_tests=1
bench=0
limit=180
ucg_path=()
ucg_dir=""
build_dir=""
extra=()
args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
    -L) layouts="$2"; shift 2 ;;
    -q) quick=(-q); shift ;;
    -x) extra_tests=0; shift ;;
    -r) rules_case=1; shift ;;
    -k) kill_tests=0; shift ;;
    -b) bench=1; shift ;;
    -t) limit="$2"; shift 2 ;;
    --ucg-path) ucg_path=(--ucg-path "$2"); ucg_dir=$2; shift 2 ;;
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    --mc) export MPI_TEST_EXPECT_MC=1; shift ;;
    --loss) loss="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

max_hosts=0
for l in $layouts; do
    if ! [[ $l =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
        echo "bad layout '$l' (HOSTSxRANKS)" >&2
        exit 2
    fi
    [ "${BASH_REMATCH[1]}" -gt "$max_hosts" ] && max_hosts=${BASH_REMATCH[1]}
done
[ "$kill_tests" = 1 ] && [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ] &&
    [ "$max_hosts" -lt 3 ] && max_hosts=3   # coll_kill's 3 x 1

if [ -z "${MULTIHOST_ID:-}" ]; then
    if ! "$top/contrib/multihost.sh" check; then
        echo "run-multihost.sh: SKIPPED: cannot make the multi-host bed" \
             "here (root and network/pid namespaces needed)"
        exit 77
    fi
    exec "$top/contrib/multihost.sh" run -n "$max_hosts" -- \
        "$here/$(basename "$0")" "${args[@]}"
fi

# --host h1:P,...,hH:P
host_list() {
    local h out=""
    for h in $(seq "$1"); do out+="h$h:$2,"; done
    echo "${out%,}"
}

. "$here/mpi_bin.sh"
mpi_bin_make "$build_dir" coll_test coll_kill coll_bench || exit 1
if [ -n "$ucg_dir" ]; then   # as run.sh does
    export OMPI_MCA_mca_base_component_path="$ucg_dir:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
fi

if ! [[ $loss =~ ^[0-9]+$ ]] || [ "$loss" -gt 100 ]; then
    echo "bad --loss '$loss' (a percentage)" >&2
    exit 2
fi
if [ "$loss" -gt 0 ]; then
    for h in $(seq "$(wc -w <<<"$MULTIHOST_HOSTS")"); do
        "$top/contrib/multihost.sh" loss "$MULTIHOST_ID" "h$h" "$loss" udp ||
            exit 1
    done
    [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ] && export MPI_TEST_EXPECT_NACKS=1
    echo "--- every host drops $loss % of the UDP packets it receives"
fi

mc_env=()
# MC_MAX_SIZE=inf: multicast at every size the tests use, not only below
# the default bound
[ "${MPI_TEST_EXPECT_MC:-0}" = 1 ] && \
    mc_env=(-x UCX_UCG_MC=yes -x UCX_UCG_MC_MAX_SIZE=inf)

# run_bench HOSTS PPN: coll_bench on the layout, checked (exit status, its
# validation, every size reported); prints rank 0's table
run_bench() {
    local hosts=$1 ppn=$2 np=$(($1 * $2))
    local log rc n
    log=$(mktemp)
    timeout -k 10 "$limit" mpirun --allow-run-as-root --oversubscribe \
        -np "$np" --host "$(host_list "$hosts" "$ppn")" \
        "${mc_env[@]}" "${extra[@]}" "$mpi_bin/coll_bench" \
        -c bcast,allreduce,barrier -s 8:64k -i 100 -I 20 -w 10 >"$log" 2>&1
    rc=$?
    # 2 collectives x 14 sizes (8 B .. 64 KiB) and the barrier (across
    # hosts: validated by its timed check, ob1 has no one-sided component)
    n=$(grep -Ec "^(bcast|allreduce|barrier) [0-9]+ " "$log")
    if [ $rc -ne 0 ] || [ "$n" -ne 29 ] ||
       grep -q 'validation FAILED' "$log"; then
        echo "coll_bench $hosts x $ppn: FAILED (exit $rc, $n of 29 sizes" \
             "reported)$([ $rc = 124 ] && echo ": TIMEOUT after ${limit}s")"
        grep -v '^ *$' "$log" | tail -15
        rc=1
    else
        echo "coll_bench $hosts x $ppn (us: coll bytes avg min max iters):"
        grep -E '^(bcast|allreduce|barrier) [0-9]+ ' "$log" | sed 's/^/  /'
        rc=0
    fi
    rm -f "$log"
    return $rc
}

fail=0
start=$(date +%s)
extras_done=0
rules_done=0
for l in $layouts; do
    hosts=${l%x*}
    ppn=${l#*x}
    np=$((hosts * ppn))
    x=(-x)
    if [ "$extra_tests" = 1 ] && [ $extras_done = 0 ] && [ $np -ge 3 ]; then
        x=()
        extras_done=1
    fi
    echo "--- $hosts hosts x $ppn ranks: --host $(host_list "$hosts" "$ppn")"
    bash "$here/run.sh" -n "$np" -t "$limit" "${quick[@]}" "${x[@]}" \
        "${ucg_path[@]}" --build-dir "$mpi_build" \
        -- --host "$(host_list "$hosts" "$ppn")" \
        "${extra[@]}" || fail=1
    if [ "$rules_case" = 1 ] && [ $rules_done = 0 ] && [ $np -ge 3 ]; then
        rules_done=1
        # (run.sh's extra tests have it, when they ran here)
        if [ ${#x[@]} -gt 0 ]; then
            bash "$here/run.sh" -R -t "$limit" "${ucg_path[@]}" \
                --build-dir "$mpi_build" \
                -- --host "$(host_list "$hosts" "$ppn")" \
                "${extra[@]}" || fail=1
        fi
    fi
    if [ "$bench" = 1 ]; then
        run_bench "$hosts" "$ppn" || fail=1
    fi
done

# coll_bench's barrier check across hosts (its timed form: no one-sided
# component there) fails a barrier that lets every rank through at once
if [ "$bench" = 1 ]; then
    nb_dir=$(mktemp -d)
    mpicc_=$(sed -n 's/^MPICC = //p' "$mpi_bin/Makefile")
    log="$nb_dir/log"
    if ! "$mpicc_" -shared -fPIC -o "$nb_dir/libno_barrier.so" \
            "$here/no_barrier.c"; then
        echo "coll_bench barrier check: cannot build no_barrier.c"; fail=1
    else
        timeout -k 10 "$limit" mpirun --allow-run-as-root --oversubscribe \
            -np 2 --host "$(host_list 2 1)" "${extra[@]}" \
            -x LD_PRELOAD="$nb_dir/libno_barrier.so" \
            "$mpi_bin/coll_bench" -c barrier -i 20 -w 2 >"$log" 2>&1
        if grep -q 'validation FAILED' "$log"; then
            echo "coll_bench barrier check across hosts: a barrier that" \
                 "waits for nobody fails it: passed"
        else
            echo "coll_bench barrier check across hosts: a barrier that" \
                 "waits for nobody passed it; output:"
            tail -5 "$log"; fail=1
        fi
    fi
    rm -rf "$nb_dir"
fi

# run_kill HOSTS PPN VICTIM [PATTERN [MODE]]: one coll_kill run, checked;
# with PATTERN (extended regular expression), its output must match it;
# MODE bcast: a bcast loop instead of allgathers
run_kill() {
    local hosts=$1 ppn=$2 victim=$3 pattern=${4:-} mode=${5:-}
    local np=$(($1 * $2))
    local log kfile rc n pid
    log=$(mktemp)
    kfile=$(mktemp -u "${MULTIHOST_DIR:-/tmp}/coll_kill.XXXXXX")
    # UCX 1.13's own failures on a dead peer (see the gtest
    # ucg_coll_errors.kill_remote_member): UCP sends eagerly, by copy
    timeout -k 10 "$limit" mpirun --allow-run-as-root --oversubscribe \
        -np "$np" --host "$(host_list "$hosts" "$ppn")" \
        --mca orte_abort_on_non_zero_status 0 \
        -x UCX_ZCOPY_THRESH=inf -x UCX_RNDV_THRESH=inf \
        "${mc_env[@]}" "${extra[@]}" "$mpi_bin/coll_kill" "$victim" \
        "$kfile" "${KILL_BOUND:-60}" $mode >"$log" 2>&1 &
    pid=$!
    # mpirun may not end after the survivors' exits (see coll_kill.c): it
    # is stopped once each survivor has printed its line (bounded by
    # timeout in any case)
    while kill -0 $pid 2>/dev/null; do
        n=$(grep -c '^coll_kill: rank [0-9]* on ' "$log")
        [ "$n" -ge $((np - 1)) ] && break
        sleep 0.2
    done
    kill -TERM $pid 2>/dev/null
    wait $pid
    rc=$?
    n=$(grep -c '^coll_kill: rank [0-9]* on [^ ]*: error [0-9.]* s after the kill' "$log")
    grep '^coll_kill: ' "$log" | sed "s/^/  /"
    if [ $rc -eq 124 ] && [ "$n" -lt $((np - 1)) ]; then
        echo "coll_kill $hosts x $ppn victim $victim: TIMEOUT after ${limit}s"
        rc=1
    elif grep -q '^coll_kill: .*FAIL' "$log" || [ "$n" -ne $((np - 1)) ] ||
         ! grep -q "^coll_kill: rank $victim kills itself" "$log" ||
         { [ -n "$pattern" ] && ! grep -Eq "$pattern" "$log"; }; then
        echo "coll_kill $hosts x $ppn victim $victim: FAILED ($n of" \
             "$((np - 1)) survivors got an error in time); other output:"
        grep -v '^coll_kill: ' "$log" | grep -v '^ *$' | tail -15
        rc=1
    else
        echo "coll_kill $hosts x $ppn victim $victim: passed"
        rc=0
    fi
    rm -f "$log" "$kfile" "$kfile.tmp"
    return $rc
}

if [ "$kill_tests" = 1 ] && [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
    echo "--- coll_kill: a rank killed during an allgather"
    # every survivor on another host: the error must come from UCP's error
    # handling on the endpoints to other hosts (UCG's log line)
    run_kill 3 1 1 "connection to rank 1 \\(.*another host\\) failed" ||
        fail=1
    run_kill 2 2 2 || fail=1   # a host leader
    run_kill 2 2 3 || fail=1   # a host member
    if [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ]; then
        echo "--- coll_kill: a rank killed during a bcast loop (mc_udp)"
        run_kill 3 1 1 "" bcast || fail=1   # a leader: root, then member
        run_kill 2 2 2 "" bcast || fail=1   # a leader with a member
    fi
fi

echo "run-multihost.sh: layouts {$layouts}$([ "$loss" -gt 0 ] &&
      echo ", $loss % UDP loss") on bed $MULTIHOST_ID" \
     "$([ $fail = 0 ] && echo PASSED || echo FAILED)" \
     "in $(( $(date +%s) - start )) s"
exit $fail
