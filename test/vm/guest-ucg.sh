#!/bin/bash
#
# Runs in both guests of the VM bed (test/vm/ucg.sh starts it with
# 'contrib/vmbed.sh run -n 2'); vm0 launches, vm1 hosts ranks through
# vmbed-exec and waits at the final barrier.  Two ranks per guest; UCG's
# broadcasts between the guests' leaders on mc_verbs (UCX_UCG_MC=y,
# MC_TL=mc_verbs, MC_MAX_SIZE=inf), 10 % of the first transmissions of
# data packets dropped at every member (UCX_MC_VERBS_GROUP_TEST_DROP=100):
#   1. ucg_hosts (test/mpi/ucg_hosts.c): UCG's own bcast from every root
#      and allreduce (ALLREDUCE_P2P=knomial: reduce, then a bcast between
#      the leaders), every result checked; its printed plans name mc_bcast
#      on mc_verbs; UCG's counters at context destroy show data received
#      by multicast in both guests, repairs and NACKs;
#   2. the MPI suite (test/mpi/run.sh -q -w -x: coll_test's quick matrix on
#      MPI_COMM_WORLD) on 2 ranks, one per guest, with coll/ucg forced,
#      proof that it served bcast and allreduce and that mc_verbs carried
#      data, NACKs sent.
# Environment: VMBED_UCG_BUILD (the build tree), VMBED_UCG_COMP (a
# directory holding coll/ucg's mca_coll_ucg.so), VMBED_UCG_ITERS (1).
# Prints one line per check; exits 0 when all pass.  Every wait bounded.
#
set -u
prog=guest-ucg
. "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${VMBED_UCG_BUILD:-$top/build}
i=${VMBED_INDEX:-x}
hosts=vm0:2,vm1:2
# UCP's ud_verbs on rxe needs UCX's Ethernet DGID check off (docs/vmbed.md)
mc_env=(-x UCX_UCG_MC=y -x UCX_UCG_MC_TL=mc_verbs -x UCX_UCG_MC_MAX_SIZE=inf
        -x UCX_MC_VERBS_GROUP_TEST_DROP=100 -x UCX_UD_VERBS_ETH_DGID_CHECK=n)

if [ "$i" = 0 ]; then
    # --- 1. UCG itself ---
    t0=$SECONDS
    log=$s/ucg_hosts.log
    timeout -k 10 "$step" mpirun --allow-run-as-root --host "$hosts" -np 4 \
        "${mc_env[@]}" -x UCX_UCG_ALLREDUCE_P2P=knomial \
        -x UCX_LOG_LEVEL=diag "$build/test/mpi/ucg_hosts" \
        "${VMBED_UCG_ITERS:-1}" >"$log" 2>&1
    rc=$?
    grep -E '^ucg_hosts: |^rank [0-9]+: FAIL' "$log"
    if [ $rc -eq 0 ] && grep -q '^ucg_hosts: OK' "$log"; then
        pass "ucg_hosts on $hosts: results exact ($((SECONDS - t0)) s)"
    else
        flunk "ucg_hosts on $hosts: rc=$rc$([ $rc = 124 ] &&
              echo ", TIMEOUT after $step s")"
        grep -v 'UCX  DIAG' "$log" | tail -20
    fi
    # rank 0's plans: the phase between the guests' leaders
    n=$(grep -Ec '^ +[0-9]+: mc_bcast +mc_verbs ' "$log")
    if [ "$n" -ge 2 ]; then
        pass "the printed bcast and allreduce plans run mc_bcast on mc_verbs"
    else
        flunk "the printed plans name mc_bcast on mc_verbs $n times (not 2):"
        grep -E '^(bcast|allreduce) |^ +[0-9]+: ' "$log"
    fi
    grep -E '^ +[0-9]+: mc_bcast ' "$log" | head -2
    # UCG's counters at context destroy, one line per rank that used it
    for g in vm0 vm1; do
        if grep "\[$g:" "$log" | grep -Eq \
            'UCG: mc_verbs received [0-9]+ datagrams, [1-9][0-9]* data packets by multicast'
        then
            pass "$g: a leader received data by multicast on mc_verbs"
        else
            flunk "$g: no leader received data by multicast on mc_verbs"
        fi
    done
    if grep -Eq 'UCG: mc_verbs .* [1-9][0-9]* repaired; [1-9][0-9]* NACKs' \
        "$log"; then
        pass "the forced losses were repaired after NACKs"
    else
        flunk "no member shows repairs and NACKs after the forced losses"
    fi
    grep -Eo '\[vm[01]:[0-9]+.*UCG: mc_verbs .*' "$log" | sed 's/^/  /'

    # --- 2. the MPI suite with coll/ucg ---
    t0=$SECONDS
    log=$s/run.log
    MPI_TEST_EXPECT_UCG=1 MPI_TEST_EXPECT_MC=1 MPI_TEST_MC_TL=mc_verbs \
        MPI_TEST_EXPECT_NACKS=1 timeout -k 10 $((step + 30)) \
        bash "$top/test/mpi/run.sh" -n 2 -q -w -x -t "$step" \
        --ucg-path "${VMBED_UCG_COMP:-}" --build-dir "$build" -- \
        --host vm0:1,vm1:1 --mca coll ucg,basic,libnbc,tuned,self \
        "${mc_env[@]}" >"$log" 2>&1
    rc=$?
    cat "$log"
    if [ $rc -eq 0 ] && grep -q '^run.sh: np {2} PASSED' "$log"; then
        pass "the MPI suite (coll_test -q -w) on vm0:1,vm1:1 with coll/ucg" \
             "and mc_verbs ($((SECONDS - t0)) s)"
    else
        flunk "the MPI suite on vm0:1,vm1:1: rc=$rc"
    fi
fi

vmbed-sync barrier end -t $((3 * step + 120)) >/dev/null ||
    flunk "barrier end"
[ $fail -eq 0 ] && echo "$prog: all passed"
exit $fail
