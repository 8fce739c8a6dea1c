#!/bin/bash
#
# Run the MPI collective correctness suite (coll_test) for several process
# counts.  Every mpirun is bounded by `timeout`.
#
# Usage: test/mpi/run.sh [-n "2 3 4"] [-t SECONDS] [-q] [-w] [-v] [-x] [--ucg-path DIR]
#                        [--build-dir DIR] [-- MPIRUN_ARGS...]
#   -n LIST   process counts (default: "2 3 4 5 6 7 8")
#   -t SEC    time limit per mpirun (default 180)
#   -q        quick matrix (no 8 KiB..4 MiB sizes)
#   -w        MPI_COMM_WORLD only (coll_test -w: no dup, split and subset
#             communicators)
#   -v        print every mismatch, not only the first per collective
#   -R        only the MPMD cases of differing tuning rules files (rank 0
#             reads another coll_ucg_rules_file than ranks 1-2; the -x
#             variables given to every context, then to rank 0 only;
#             coll/ucg only): no process counts, no other extra test
#   -x        skip the extra tests: coll_test -F (the Fortran types and
#             C bool), coll_nb (nonblocking collectives), coll_redscan
#             (reduce_scatter, scan and their nonblocking forms), coll_vcoll
#             (gatherv, scatterv, allgatherv and theirs), coll_a2a
#             (alltoall, alltoallv and their nonblocking forms), late_rank and
#             comm_churn (about 40 s), and, with coll/ucg, coll_fault
#   --build-dir DIR  the configured build tree whose test/mpi programs run
#             (built there with make); default build/, or the source tree
#             when it was configured in place
#   after --   extra mpirun arguments, e.g.
#              -- --mca coll ucg,basic,libnbc,tuned,self
#   MPIRUN_ARGS (environment) is also appended to mpirun's arguments.
#
# MPI_TEST_EXPECT_MC=1 (across hosts): UCG's broadcasts between host
# leaders on multicast (-x UCX_UCG_MC=yes), on the transport
# MPI_TEST_MC_TL names (mc_udp, the default, or mc_verbs, mc_mlx5:
# -x UCX_UCG_MC_TL=...); at finalize UCG's diag line (-x
# UCX_LOG_LEVEL=diag) must show, for some rank, that the transport
# carried data: "UCG: mc_udp sent N, received M datagrams; K NACKs ..."
# with M > 0, or "UCG: mc_verbs received M datagrams, D data packets by
# multicast, R repaired; K NACKs ..." with D > 0; with
# MPI_TEST_EXPECT_NACKS=1 (loss injected) K > 0 for some rank.
#
# Proof of use: with MPI_TEST_EXPECT_UCG=1 the runner adds
# `--mca coll_ucg_verbose 1` and requires the output of every run to contain
# the coll/ucg component's counter lines.  Assumption about that component:
# at verbose level 1 it prints, at communicator destruction / finalize, lines
# starting with "coll:ucg:" that name the collective and carry "ucg=N", the
# number of calls it served itself (vs. delegated to the previous module).
# The check requires such a line with N > 0 for bcast and for allreduce, e.g.
#   [host:pid] coll:ucg: comm MPI_COMM_WORLD (cid 0) rank 0: bcast ucg=2 delegated=0 ...
# (Open MPI prefixes "[host:pid] ", so the pattern is not anchored.)
# --ucg-path DIR runs with OMPI_MCA_mca_base_component_path=DIR:<the Open
# MPI's own component directory> (a build tree's .libs does not load: link
# the .so into a directory of its own).  `-- --mca mca_base_component_path
# ...` works as well.
#
# The stack: the programs run with the Open MPI the build tree was
# configured with (its MPICC; mpi_bin.sh's mpi_stack): Debian 12's 4.1.4,
# or Open MPI 5 for a tree configured --with-ompi=DIR (contrib/ompi5-stack.sh
# builds it; contrib/test.sh's build-ompi5/), whose mpirun then runs them.
# There coll_persist (MPI 4.0's persistent collectives) runs too; with
# MPI_TEST_EXPECT_UCG=1 every one of its sixteen kinds must be served by
# coll/ucg ("coll:ucg: ... bcast_init ucg=N>0 ...") and none delegated,
# tuning rules hand some to the previous module, and a persistent
# alltoallv whose counts differ on one rank fails on every rank.
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
nps="2 3 4 5 6 7 8"
limit=180
extra_tests=1
rules_only=0
build_dir=""
ucg_path=""
targs=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nps="$2"; shift 2 ;;
    -t) limit="$2"; shift 2 ;;
    -q) targs+=(-q); shift ;;
    -w) targs+=(-w); shift ;;
    -v) targs+=(-v); shift ;;
    -x) extra_tests=0; shift ;;
    -R) rules_only=1; shift ;;
    --ucg-path) ucg_path=$2; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
if [ "$rules_only" = 1 ]; then
    nps=""
    extra_tests=0
fi
# shellcheck disable=SC2206
extra+=(${MPIRUN_ARGS:-})
if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
    extra+=(--mca coll_ucg_verbose 1)
fi
mc_tl=${MPI_TEST_MC_TL:-mc_udp}
if [ "$mc_tl" = mc_udp ]; then
    mc_used="$mc_tl sent [0-9]+, received [1-9]"
else
    mc_used="$mc_tl received [0-9]+ datagrams, [1-9][0-9]* data packets by multicast"
fi
if [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ]; then
    extra+=(-x UCX_UCG_MC=yes -x UCX_UCG_MC_MAX_SIZE=inf -x UCX_LOG_LEVEL=diag)
    [ -n "${MPI_TEST_MC_TL:-}" ] && extra+=(-x UCX_UCG_MC_TL="$mc_tl")
fi

. "$here/mpi_bin.sh"
mpi_bin_make "$build_dir" coll_test || exit 1
mpi_stack || exit 1
if [ -n "$ucg_path" ]; then
    export OMPI_MCA_mca_base_component_path="$ucg_path:$mpi_comp_dir"
    # Open MPI 5's PMIx reads OMPI_MCA_ variables too: without its own
    # directory named, each rank's PMIx lists every file of ours as "bad
    # prefix" (8 lines per rank)
    if [ "${mpi_version%%.*}" -ge 5 ]; then
        pmix_dir=$("$(dirname "$mpi_run")/pmix_info" --path pkglibdir \
                   --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
        [ -n "$pmix_dir" ] &&
            export PMIX_MCA_mca_base_component_path="$pmix_dir"
    fi
fi
echo "run.sh: Open MPI $mpi_version ($mpi_run)"

fail=0
start=$(date +%s)
# UCG's line for a member that failed (ucg_group_failure.c)
member_lost='UCG group [0-9]+ rank [0-9]+: (rank [0-9]+ \(pid [0-9]+\) has exited|the connection to rank [0-9]+ .* failed)'
for np in $nps; do
    log=$(mktemp)
    timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe \
        -np "$np" "${extra[@]}" "$mpi_bin/coll_test" "${targs[@]}" >"$log" 2>&1
    rc=$?
    grep -v 'coll:ucg:' "$log" | grep -E '^(np=|MISMATCH)' | head -40
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "np=$np: TIMEOUT after ${limit}s"
        fail=1
    elif [ $rc -ne 0 ]; then
        echo "np=$np: mpirun exited with $rc; other output:"
        grep -Ev '^(np=|MISMATCH)|coll:ucg:' "$log" | tail -15
        fail=1
    elif grep -Eq "$member_lost" "$log"; then
        # every rank ran to its end: one that exits while another still
        # finalizes left after its last collective, which is no failure
        echo "np=$np: a member's normal exit was logged as a failure:"
        grep -E "$member_lost" "$log" | head -5
        fail=1
    fi
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        for coll in bcast allreduce; do
            if ! grep 'coll:ucg:' "$log" | grep -w "$coll" |
                 grep -Eq 'ucg=[1-9][0-9]*'; then
                echo "np=$np: no 'coll:ucg: ... $coll ... ucg=N>0' line:" \
                     "coll/ucg was not used for $coll"
                fail=1
            fi
        done
        grep 'coll:ucg:' "$log" | grep -Ew 'bcast|allreduce' | head -2
    fi
    if [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ]; then
        # UCG's counters line at finalize: some leader received multicast
        # data; with MPI_TEST_EXPECT_NACKS=1 some member also lost some
        if ! grep -Eq "UCG: $mc_used" "$log"; then
            echo "np=$np: no 'UCG: $mc_used' line:" \
                 "$mc_tl did not carry the broadcasts"
            fail=1
        elif [ "${MPI_TEST_EXPECT_NACKS:-0}" = 1 ] &&
             ! grep "UCG: $mc_tl " "$log" | grep -Eq '; [1-9][0-9]* NACKs'
        then
            echo "np=$np: loss was asked, but no member sent a NACK"
            fail=1
        fi
        grep -Eo "UCG: $mc_tl .*" "$log" | head -3 | sed 's/^/  /'
    fi
    rm -f "$log"
done
# run_extra NAME NP PATTERN [--not PATTERN2] [MPIRUN_ARGS...] -- PROGRAM
# [ARGS...]: one bounded mpirun; fails unless it exits with 0 and its output
# matches the extended regular expression PATTERN (and not PATTERN2)
run_extra() {
    local name=$1 np=$2 pattern=$3 anti='' args=() log rc
    shift 3
    if [ "${1:-}" = --not ]; then anti=$2; shift 2; fi
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    log=$(mktemp)
    timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe \
        -np "$np" "${extra[@]}" "${args[@]}" "$@" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "$name: TIMEOUT after ${limit}s"; rc=1
    elif [ $rc -ne 0 ]; then
        echo "$name: mpirun exited with $rc"
    elif ! grep -Eq "$pattern" "$log"; then
        echo "$name: output does not match '$pattern'"; rc=1
    elif [ -n "$anti" ] && grep -Eq "$anti" "$log"; then
        echo "$name: output matches '$anti':"
        grep -E "$anti" "$log" | head -5; rc=1
    fi
    if [ $rc -ne 0 ]; then
        grep -v 'coll:ucg: comm' "$log" | tail -15
    else
        echo "$name: passed"
    fi
    rm -f "$log"
    return $rc
}

# write_rules DIR: the tuning rules files of the rules cases: hand.rules
# (sizes handed over, a flat rule), bad.rules (a syntax error), other.rules
write_rules() {
    printf '%s\n' 'ucg-rules 1' 'bcast * * 1-1k prev' \
        'reduce * * 4k- prev' 'allreduce * * 1-64 flat' >"$1/hand.rules"
    printf '%s\n' 'ucg-rules 1' 'reduce * * 4k-fast prev' >"$1/bad.rules"
    printf '%s\n' 'ucg-rules 1' 'bcast * * * prev' >"$1/other.rules"
}

# Open MPI's -x applies to the application context it precedes (4.1.4: in
# an MPMD command line, the first one only): each context of an MPMD run
# gets every -x of the mpirun arguments again
mpmd_env=()
for ((i = 0; i + 1 < ${#extra[@]}; ++i)); do
    [ "${extra[$i]}" = -x ] && mpmd_env+=(-x "${extra[$((i + 1))]}")
done

# run_mpmd_rules [first]: MPMD, rank 0 reads another rules file than ranks
# 1-2: coll/ucg warns and every rank uses the built-in rules
# (MPI_COMM_WORLD: none at np=3, hand.rules would hand its small bcasts
# over), results right.  Every context gets the -x variables: UCG got the
# same UCX_UCG_* settings on every rank (its warning when they differ is
# absent) and, with MPI_TEST_EXPECT_MC, multicast carried broadcasts.
# With "first", the -x variables reach rank 0 only (as Open MPI gives them
# when they precede the first context): results stay right and, with
# MPI_TEST_EXPECT_MC (UCX_UCG_MC, UCX_UCG_MC_MAX_SIZE among them), UCG
# warns that the ranks' settings differ.  (Across hosts with --mc, rank
# 0's MC_MAX_SIZE=inf made that hang in a 400 KB bcast of root 2 before
# UCG's members agreed on their settings.)
run_mpmd_rules() {
    local mode=${1:-} dir log rc=0 env=("${mpmd_env[@]}")
    local name="coll_test np=3 with different rules files"
    if [ "$mode" = first ]; then
        env=()
        name+=", -x for rank 0 only"
    fi
    dir=$(mktemp -d)
    write_rules "$dir"
    log=$dir/log
    timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe \
        "${extra[@]}" \
        -np 1 "${env[@]}" \
        -x "OMPI_MCA_coll_ucg_rules_file=$dir/other.rules" \
        "$mpi_bin/coll_test" -q : \
        -np 2 "${env[@]}" \
        -x "OMPI_MCA_coll_ucg_rules_file=$dir/hand.rules" \
        "$mpi_bin/coll_test" -q >"$log" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "$name: TIMEOUT after ${limit}s"
        rc=1
    elif [ $rc -ne 0 ] ||
       ! grep -q "comm MPI_COMM_WORLD: the ranks' tuning rules differ" \
            "$log" ||
       grep 'comm MPI_COMM_WORLD' "$log" | grep -Eq 'handed=[1-9]'; then
        echo "$name: rc=$rc, no warning, or calls on MPI_COMM_WORLD handed" \
             "over"
        rc=1
    elif [ "$mode" != first ] &&
         grep -q "planner settings .* differ" "$log"; then
        echo "$name: the ranks' UCG settings differ (an -x not given to" \
             "every context?)"
        rc=1
    elif [ "$mode" = first ] && [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ] &&
         ! grep -q "UCG group rank 0/3: the members' planner settings" \
              "$log"; then
        echo "$name: no warning that the ranks' UCG settings differ"
        rc=1
    elif [ "$mode" != first ] && [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ] &&
         ! grep -Eq "UCG: $mc_used" "$log"; then
        echo "$name: no 'UCG: $mc_used' line: $mc_tl did not carry the" \
             "broadcasts"
        rc=1
    fi
    if [ $rc -ne 0 ]; then
        grep -v 'coll:ucg: comm .* ucg=' "$log" | tail -10
    else
        echo "$name: passed"
        [ "$mode" != first ] && [ "${MPI_TEST_EXPECT_MC:-0}" = 1 ] &&
            grep -Eo "UCG: $mc_tl .*" "$log" | head -3 | sed 's/^/  /'
    fi
    rm -rf "$dir"
    return $rc
}

if [ "$rules_only" = 1 ]; then
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        run_mpmd_rules || fail=1
        run_mpmd_rules first || fail=1
    else
        echo "run.sh -R: the rules cases need coll/ucg" \
             "(MPI_TEST_EXPECT_UCG=1)"
        fail=1
    fi
fi

# run_rules NAME RULES PATTERN... -- PROGRAM [ARGS...]: one bounded mpirun
# at np 3 with the tuning rules RULES (lines separated by ';', after the
# 'ucg-rules 1' header); fails unless it exits with 0 and its output
# matches every extended regular expression PATTERN
run_rules() {
    local name=$1 rules=$2 pats=() rfile log rc pat
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    rfile=$(mktemp)
    log=$(mktemp)
    { echo 'ucg-rules 1'; tr ';' '\n' <<<"$rules"; } >"$rfile"
    timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe \
        -np 3 "${extra[@]}" --mca coll_ucg_rules_file "$rfile" "$@" \
        >"$log" 2>&1
    rc=$?
    for pat in "${pats[@]}"; do
        if [ $rc -ne 0 ] || ! grep -Eq "$pat" "$log"; then
            echo "$name: rc=$rc, no line matching '$pat'"
            grep -v 'coll:ucg: comm' "$log" | tail -10
            rc=1
            break
        fi
    done
    [ $rc -eq 0 ] && echo "$name: passed"
    rm -f "$rfile" "$log"
    return $rc
}

# coll/ucg only (its test-only knobs): one rank's preparation of one call,
# its creation of a UCG group, or a start fails; all ranks fall back
# together or fail together, results stay right, nothing hangs
if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ] && [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_fault || exit 1
    for rc in "0 1" "1 5" "2 13" "1 40"; do
        set -- $rc
        run_extra "coll_fault np=3 fail rank $1 call $2" 3 \
            'could not prepare it, all ranks delegate' \
            --mca coll_ucg_test_fail_rank "$1" \
            --mca coll_ucg_test_fail_call "$2" -- "$mpi_bin/coll_fault" 6 ||
            fail=1
    done
    # UCG's group creation fails on one rank (MPI_COMM_WORLD's in MPI_Init,
    # then the dup's): every rank uses the previous module there, nobody
    # waits in UCG's out-of-band rounds
    for rc in "1 1" "2 2"; do
        set -- $rc
        run_extra "coll_fault np=3 group creation fails on rank $1 (comm $2)" \
            3 'coll_fault: OK' \
            --mca coll_ucg_test_fail_point 1 \
            --mca coll_ucg_test_fail_rank "$1" \
            --mca coll_ucg_test_fail_call "$2" -- "$mpi_bin/coll_fault" 3 ||
            fail=1
    done
    # A start fails on one rank after all decided to run the call on UCG:
    # the others' call fails too (UCG's abort message), then every call on
    # that communicator fails everywhere; the other one works
    mpi_bin_make "$build_dir" coll_abort || exit 1
    for rc in "0 1" "1 3" "2 9" "1 22"; do
        set -- $rc
        run_extra "coll_abort np=3 start fails on rank $1 (call $2)" 3 \
            'coll_abort: OK' \
            --mca coll_ucg_test_fail_point 2 \
            --mca coll_ucg_test_fail_rank "$1" \
            --mca coll_ucg_test_fail_call "$2" -- "$mpi_bin/coll_abort" "$1" ||
            fail=1
    done
    # The same with the nonblocking forms (each waited for): the failing
    # rank's MPI_I* returns the error, the others' request completes with
    # one (UCG's abort), then only errors on that communicator.  The calls
    # are counted over nonblocking calls on UCG, Open MPI's own at
    # MPI_Comm_dup included: the first few are those
    for rc in "1 8" "2 13" "0 25"; do
        set -- $rc
        run_extra "coll_abort np=3 nonblocking start fails on rank $1 (call $2)" \
            3 'coll_abort: OK' \
            --mca coll_ucg_test_fail_point 3 \
            --mca coll_ucg_test_fail_rank "$1" \
            --mca coll_ucg_test_fail_call "$2" -- "$mpi_bin/coll_abort" "$1" 6 nb ||
            fail=1
    done
    # Tuning rules (coll_ucg_rules_file): the size ranges a rule hands to
    # the previous module go there (counted as handed=N, the other sizes
    # still on UCG), a flat rule runs UCG's point-to-point plan (flat=N),
    # and coll_test checks every result; a bad file gives one warning
    # naming file:line and the built-in rules, and ranks whose files differ
    # all use the built-in rules (one warning); the counters are there:
    # MPI_TEST_EXPECT_UCG added coll_ucg_verbose 1
    rules_dir=$(mktemp -d)
    write_rules "$rules_dir"
    rlog=$rules_dir/log
    timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe -np 3 \
        "${extra[@]}" \
        --mca coll_ucg_rules_file "$rules_dir/hand.rules" \
        "$mpi_bin/coll_test" -q >"$rlog" 2>&1
    rc=$?
    for pat in 'bcast ucg=[1-9][0-9]* delegated=[0-9]+ handed=[1-9]' \
               'reduce ucg=[1-9][0-9]* delegated=[0-9]+ handed=[1-9]' \
               'allreduce ucg=[1-9][0-9]* delegated=[0-9]+ handed=0 flat=[1-9]'; do
        if [ $rc -ne 0 ] || ! grep -Eq "$pat" "$rlog"; then
            echo "coll_test np=3 with rules handing sizes over: rc=$rc," \
                 "no line matching '$pat'"
            grep -v 'coll:ucg: comm' "$rlog" | tail -10
            grep 'coll:ucg: comm' "$rlog" | head -8
            fail=1
            break
        fi
    done
    [ $rc -eq 0 ] && echo "coll_test np=3 with rules handing sizes over: passed"
    # The built-in table at np=2 on one host: reduces of up to 1 KiB go to
    # the previous module, larger ones run on UCG (coll_test checks every
    # result of both)
    run_extra "coll_test np=2 with the built-in rules" 2 \
        ': reduce ucg=[1-9][0-9]* delegated=[0-9]+ handed=[1-9]' -- \
        "$mpi_bin/coll_test" -q || fail=1
    # Over pml ucx (Debian's Open MPI) the built-in table is the one
    # measured with it: allreduces up to 2 KiB go to tuned (with ob1's
    # table, those from 512 B run on UCG); coll_bench checks the results
    if [ "$mpi_run" = mpirun ]; then
        mpi_bin_make "$build_dir" coll_bench || exit 1
        run_extra "coll_bench np=2 with the built-in rules over pml ucx" 2 \
            ': allreduce ucg=0 delegated=0 handed=[1-9]' \
            --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            -- "$mpi_bin/coll_bench" -c allreduce -s 512:2k -i 20 -w 2 ||
            fail=1
    fi
    run_extra "coll_test np=3 with a bad rules file" 3 \
        "coll:ucg: $rules_dir/bad.rules:2: bytes: 'fast' is not a number.*; using the built-in tuning rules" \
        --mca coll_ucg_rules_file "$rules_dir/bad.rules" -- \
        "$mpi_bin/coll_test" -q || fail=1
    run_mpmd_rules || fail=1
    run_mpmd_rules first || fail=1
    rm -rf "$rules_dir"

    # mpi_yield_when_idle (set by Open MPI on an oversubscribed node): a
    # rank waiting in a collective on UCG gives its CPU away between polls
    # (its counter line shows yields > 0; without the parameter, none)
    run_extra "coll_test np=3 with mpi_yield_when_idle" 3 \
        'coll:ucg: .* ucg=[1-9][0-9]* .*yields=[1-9]' \
        --mca mpi_yield_when_idle 1 -- "$mpi_bin/coll_test" -q || fail=1
fi

# The Fortran predefined types and MPI_C_BOOL (coll_test -F), checked
# against the test's reference (on Open MPI's own modules too); with
# coll/ucg, every reduction of them runs on UCG: some allreduce and reduce
# calls served, none handed to the previous module
if [ "$extra_tests" = 1 ]; then
    fpat='np=3 PASSED'
    fnot=''
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        fpat='coll:ucg: .* reduce ucg=[1-9]'
        fnot='coll:ucg: .* (allreduce|reduce) ucg=[0-9]+ delegated=[1-9]'
    fi
    run_extra "coll_test -F np=3 (Fortran types, C bool)" 3 "$fpat" \
        ${fnot:+--not "$fnot"} -- "$mpi_bin/coll_test" -F "${targs[@]}" ||
        fail=1
fi

# Nonblocking collectives (coll_nb): many outstanding on three
# communicators, completed in any order, results checked; with coll/ucg,
# every one of them served by UCG
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_nb || exit 1
    npat='coll_nb: OK'
    nnot=''
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        npat='coll:ucg: .* iallgather ucg=[1-9]'
        nnot='coll:ucg: .* i[a-z]+ ucg=[0-9]+ delegated=[1-9]'
    fi
    for np in 2 3; do
        run_extra "coll_nb np=$np (nonblocking collectives)" "$np" "$npat" \
            ${nnot:+--not "$nnot"} -- "$mpi_bin/coll_nb" 30 || fail=1
    done
fi

# The benchmark's per-call median (coll_bench -M, used by bench-mpi.sh -M
# on loaded machines): runs every collective it times, validates their
# data (exit 0) and says it reports medians
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_bench || exit 1
    run_extra "coll_bench -M np=2 (per-call median)" 2 \
        '^# np=2; latency in us: per-rank median' -- \
        "$mpi_bin/coll_bench" -M -c bcast,allreduce,reduce,ibcast,iallreduce,ireduce,barrier,gather,scatter,allgather,ibarrier,igather,iscatter,iallgather \
        -s 8:64 -i 50 -w 5 || fail=1
    # and the spans on the common clock (coll_bench -G, bench-mpi.sh -G)
    run_extra "coll_bench -G np=3 (spans on the common clock)" 3 \
        '^# np=3; latency in us: span of each call' -- \
        "$mpi_bin/coll_bench" -G -c bcast,allreduce,barrier,ibcast \
        -s 8:64 -i 50 -w 5 || fail=1
fi

# contrib/ucg-tune.sh (Debian's Open MPI, which it runs): a short run
# decides the barrier first, with a barrier row for every way, and writes
# a rules file ucg_info accepts, with the barrier's and allreduce's medians
if [ "$extra_tests" = 1 ] && [ -n "$ucg_path" ] && [ "$mpi_run" = mpirun ] &&
   [ -n "${MPI_TEST_EXPECT_UCG:-}" ]; then
    tune_dir=$(mktemp -d)
    if timeout -k 10 "$limit" "$here/../../contrib/ucg-tune.sh" -S 2 \
            -c allreduce -s 8:16 -i 20 -I 5 -r 1 --ucg-path "$ucg_path" \
            --build-dir "$mpi_build" -o "$tune_dir/t.rules" \
            >"$tune_dir/log" 2>&1 &&
       [ "$(grep -c '^2,2,2,[a-z]*,1,barrier,0,' "$tune_dir/t.rules.csv")" = 3 ] &&
       grep -Eq '^  shape 2: the barrier goes (ucg|flat|prev);' \
            "$tune_dir/log" &&
       grep -q '^# np=2 ppn=2 barrier: median' "$tune_dir/t.rules" &&
       grep -q '^# np=2 ppn=2 allreduce: median' "$tune_dir/t.rules"; then
        echo "ucg-tune.sh np=2 (the barrier decided first): passed"
    else
        echo "ucg-tune.sh np=2 (the barrier decided first): FAILED"
        tail -15 "$tune_dir/log"
        fail=1
    fi
    rm -rf "$tune_dir"
fi

# Reduce-scatter and scans (coll_redscan): blocking and nonblocking, on
# the world, a split (odd sizes) and a reversed communicator, every result
# checked; with coll/ucg, every one of their calls served by UCG (none
# delegated or handed over)
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_redscan || exit 1
    rpat='coll_redscan: OK'
    rnot=''
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        rpat='coll:ucg: .* iexscan ucg=[1-9]'
        rnot='coll:ucg: .* (i?reduce_scatter(_block)?|i?(ex)?scan) ucg=[0-9]+ (delegated=[1-9]|delegated=[0-9]+ handed=[1-9])'
    fi
    for np in 3 4 5; do
        run_extra "coll_redscan np=$np (reduce_scatter, scan and their nonblocking forms)" \
            "$np" "$rpat" ${rnot:+--not "$rnot"} -- "$mpi_bin/coll_redscan" 2 ||
            fail=1
    done
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        # The tuning rules name them: every scan handed to the previous
        # module, every reduce_scatter_block on UCG's flat plan (on one
        # host its plan would be sm_reduce_scatter); results still checked
        rs_rules=$(mktemp)
        printf '%s\n' 'ucg-rules 1' 'scan * * * prev' \
            'reduce_scatter_block * * * flat' >"$rs_rules"
        run_extra "coll_redscan np=3 with rules (scan prev, reduce_scatter_block flat)" \
            3 'coll:ucg: .* scan ucg=0 delegated=0 handed=[1-9]' \
            --not 'coll:ucg: .* (reduce_scatter_block ucg=[0-9]+ delegated=[0-9]+ handed=[0-9]+ flat=0 | scan ucg=[1-9])' \
            --mca coll_ucg_rules_file "$rs_rules" -- \
            "$mpi_bin/coll_redscan" 1 || fail=1
        rm -f "$rs_rules"
    fi
fi

# Gatherv, scatterv, allgatherv (coll_vcoll): blocking and nonblocking, on
# the world, a split (odd sizes) and a reversed communicator, the whole
# receive buffers checked; with coll/ucg, every one of their calls served
# by UCG (none delegated or handed over)
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_vcoll || exit 1
    vpat='coll_vcoll: OK'
    vnot=''
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        vpat='coll:ucg: .* iallgatherv ucg=[1-9]'
        vnot='coll:ucg: .* i?(gatherv|scatterv|allgatherv) ucg=[0-9]+ (delegated=[1-9]|delegated=[0-9]+ handed=[1-9])'
    fi
    for np in 2 3 5; do
        run_extra "coll_vcoll np=$np (gatherv, scatterv, allgatherv and their nonblocking forms)" \
            "$np" "$vpat" ${vnot:+--not "$vnot"} -- "$mpi_bin/coll_vcoll" 1 ||
            fail=1
    done
    # Tuning rules for them, looked up with 0 bytes: gatherv (and igatherv)
    # handed to the previous module, allgatherv on UCG's flat plan, scatterv
    # untouched; every result still checked
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        run_rules "coll_vcoll np=3 with rules" \
            'gatherv * * 0 prev;allgatherv * * * flat' \
            'coll_vcoll: OK' \
            ': i?gatherv ucg=0 delegated=0 handed=[1-9]' \
            ': i?allgatherv ucg=[1-9][0-9]* delegated=0 handed=0 flat=[1-9]' \
            ': i?scatterv ucg=[1-9][0-9]* delegated=0 handed=0 flat=0' \
            -- "$mpi_bin/coll_vcoll" 1 || fail=1
    fi
fi

# Alltoall and alltoallv, blocking and nonblocking (coll_a2a): types,
# sizes, in place, communicator shapes (np 3 and 5: odd halves), results
# checked; with coll/ucg, each of the four served by UCG on every
# communicator and none delegated
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" coll_a2a || exit 1
    for np in 2 3 5; do
        alog=$(mktemp)
        timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root --oversubscribe \
            -np "$np" "${extra[@]}" "$mpi_bin/coll_a2a" "${targs[@]}" \
            >"$alog" 2>&1
        rc=$?
        afail=0
        if [ $rc -ne 0 ] || ! grep -q 'coll_a2a: OK' "$alog"; then
            echo "coll_a2a np=$np: rc=$rc"
            afail=1
        elif [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
            for coll in alltoall alltoallv ialltoall ialltoallv; do
                if ! grep -Eq "coll:ucg: comm MPI_COMM_WORLD .* $coll ucg=[1-9][0-9]* delegated=0 " \
                     "$alog"; then
                    echo "coll_a2a np=$np: no 'coll:ucg: ... $coll ucg=N>0" \
                         "delegated=0' line for MPI_COMM_WORLD"
                    afail=1
                fi
            done
            if grep -Eq 'coll:ucg: .* i?alltoallv? ucg=[0-9]+ delegated=[1-9]' \
                 "$alog"; then
                echo "coll_a2a np=$np: a call was delegated"
                afail=1
            fi
        fi
        if [ $afail = 1 ]; then
            grep -v 'coll:ucg: comm' "$alog" | tail -15
            grep 'coll:ucg: comm MPI_COMM_WORLD' "$alog" | grep alltoall |
                head -4
            fail=1
        else
            grep 'coll_a2a: OK' "$alog"
        fi
        rm -f "$alog"
    done
fi

# Persistent collectives (coll_persist; MPI 4.0: Open MPI 5 only): each
# initialized once, started many times with new data, results checked;
# with coll/ucg, every kind served by UCG and none delegated
if [ "$extra_tests" = 1 ] && [ "${mpi_version%%.*}" -ge 5 ]; then
    mpi_bin_make "$build_dir" coll_persist || exit 1
    # with coll/ucg the strided datatype is freed once the requests exist
    # (coll_persist's "free": its requests keep it; Open MPI 5.0.7's own
    # libnbc does not); and no tuning rule hands a call to the previous
    # module: every call on UCG
    pfree=""
    pargs=()
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        pfree=free
        pargs=(--mca coll_ucg_rules_file none)
    fi
    for np in 2 3 4; do
        name="coll_persist np=$np (persistent collectives)"
        plog=$(mktemp)
        timeout -k 10 "$limit" "$mpi_run" --allow-run-as-root \
            --oversubscribe -np "$np" "${extra[@]}" "${pargs[@]}" \
            "$mpi_bin/coll_persist" 12 $pfree >"$plog" 2>&1
        rc=$?
        if [ $rc -ne 0 ] || ! grep -q 'coll_persist: OK' "$plog"; then
            echo "$name: mpirun exited with $rc, or no 'coll_persist: OK':"
            grep -v 'coll:ucg: comm' "$plog" | tail -15
            rc=1
        fi
        if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
            for c in bcast_init allreduce_init reduce_init barrier_init \
                     gather_init scatter_init allgather_init \
                     reduce_scatter_init reduce_scatter_block_init \
                     scan_init exscan_init gatherv_init scatterv_init \
                     allgatherv_init alltoall_init alltoallv_init; do
                if ! grep -Eq "coll:ucg: .* $c ucg=[1-9][0-9]* delegated=0" \
                     "$plog"; then
                    echo "$name: no 'coll:ucg: ... $c ucg=N>0" \
                         "delegated=0' line: not served by coll/ucg"
                    rc=1
                fi
            done
            nouse='_init ucg=[0-9]+ (delegated=[1-9]|delegated=0 handed=[1-9])'
            if grep -Eq "coll:ucg: .*$nouse" "$plog"; then
                echo "$name: persistent calls delegated or handed over:"
                grep -E "$nouse" "$plog" | head -4
                rc=1
            fi
        fi
        if [ $rc -eq 0 ]; then
            echo "$name: passed"
            grep -E 'coll:ucg: comm MPI_COMM_WORLD .* rank 0: (bcast|allgather)_init' \
                "$plog" | head -2
        else
            grep 'coll:ucg:' "$plog" | grep '_init' | head -8
            fail=1
        fi
        rm -f "$plog"
    done
    if [ "${MPI_TEST_EXPECT_UCG:-0}" = 1 ]; then
        # Tuning rules name persistent calls by their collective: every
        # scan_init and gatherv_init handed to the previous module at
        # MPI_*_init (libnbc runs their starts), every alltoall_init on
        # UCG's flat plan; every result still checked
        run_rules "coll_persist np=3 with rules" \
            'scan * * * prev;gatherv * * 0 prev;alltoall * * * flat' \
            'coll_persist: OK' \
            ': scan_init ucg=0 delegated=0 handed=[1-9]' \
            ': gatherv_init ucg=0 delegated=0 handed=[1-9]' \
            ': alltoall_init ucg=[1-9][0-9]* delegated=0 handed=0 flat=[1-9]' \
            ': exscan_init ucg=[1-9][0-9]* delegated=0 handed=0 flat=0' \
            -- "$mpi_bin/coll_persist" 4 || fail=1
        # A persistent alltoallv whose counts are larger on one rank:
        # every rank's MPI_Start or MPI_Wait of it returns an error, then
        # every later call on that communicator does, and another
        # communicator's persistent allgatherv still gives right results
        for np in 2 3; do
            run_extra "coll_persist np=$np mismatch (a rank's counts differ)" \
                "$np" 'coll_persist mismatch: OK' \
                --mca coll_ucg_rules_file none -- \
                "$mpi_bin/coll_persist" 5 mismatch || fail=1
        done
    fi
fi

# Slow is not dead, finished is not failed, side
# by side to save time: late_rank (a rank 12 s late, longer than the old
# default timeouts, at its first collective on MPI_COMM_WORLD and on a dup)
# and comm_churn (communicators made, used and freed at once by members of
# different speeds) with a CPU hog beside it
if [ "$extra_tests" = 1 ]; then
    mpi_bin_make "$build_dir" late_rank comm_churn || exit 1
    late_log=$(mktemp)
    run_extra "late_rank np=3" 3 'late_rank: OK' -- "$mpi_bin/late_rank" 12 \
        >"$late_log" 2>&1 &
    late_pid=$!
    timeout -k 5 "$limit" sh -c 'while :; do :; done' &
    hog_pid=$!
    run_extra "comm_churn np=3 (CPU hog beside)" 3 'comm_churn: OK' -- \
        "$mpi_bin/comm_churn" 200 || fail=1
    kill "$hog_pid" 2>/dev/null
    wait "$hog_pid" 2>/dev/null
    wait "$late_pid" || fail=1   # bounded: its mpirun runs under timeout
    cat "$late_log"
    rm -f "$late_log"
fi

echo "run.sh: np {$nps} $([ $fail = 0 ] && echo PASSED || echo FAILED)" \
     "in $(( $(date +%s) - start )) s"
exit $fail
