#!/usr/bin/env bash
#
# The project's test command (README; .ci/run runs exactly this):
#
#   contrib/test.sh [extra gtest arguments, e.g. --gtest_filter=...]
#
#   1. contrib/bootstrap.sh: packages, UCX source, autogen, configure, make (build/)
#   2. build and run the gtest suite in build/ (with an unrelated busy Open
#      MPI job beside it), and ucg_p2p_sim (UCG's point-to-point algorithms
#      against a simulated network)
#   3. contrib/check-install.sh: 'make install DESTDIR=...' lands the headers,
#      the libraries, ucx-o2m.pc and ucg-o2m.pc, and they are usable
#   4. the MPI suite (test/mpi/run.sh, np 2..8) with the coll/ucg component of
#      build/ forced, checking it served bcast and allreduce; its quick
#      matrix at np 4 and 5 with UCG's two-level host-local bcast forced
#      (UCX_UCG_SM_BCAST_2LEVEL_PPN=2, run.sh -q -x, a few seconds); then across
#      hosts of the multi-host bed (contrib/multihost.sh, network namespaces;
#      its self-test first: test/multihost/selftest.sh, about 10 s; then
#      test/multihost/mc_udp.sh, an mc_udp group on 2..4 hosts with kernel
#      loss, every message checked, and the benchmark's data check, about
#      15 s):
#      test/mpi/run-multihost.sh, quick matrix on 2 and 3 hosts x 1..2 ranks
#      and a rank on another host killed during a collective (about half a
#      minute), then the quick matrix on 2x2 and 3x1 with UCG's broadcasts
#      between hosts on mc_udp and 10 % of every host's UDP dropped, the
#      OSU-style benchmark (data checked) on both layouts, the MPMD case
#      of differing tuning rules files on 2x2 (run.sh -R, about 2 s) and a
#      host leader killed during a bcast loop (run-multihost.sh --mc
#      --loss 10 -r -b, about 40 s); skipped with a
#      message where namespaces cannot be made, e.g. not root)
#   5. the Soft-RoCE VM bed (contrib/vmbed.sh: QEMU guests with rdma_rxe,
#      Debian's kernel fetched once into a cache): its self-test
#      test/vm/selftest.sh (one guest: rxe0, ucx_info, ibv_ud_pingpong,
#      ucx_perftest over ud_verbs; two guests: mckey multicast,
#      ibv_ud_pingpong and ucx_perftest across them; status, timeout and
#      SIGTERM handling, up/exec/down; 4-5 minutes on a loaded machine),
#      then mc_verbs's device tests (o2m_gtest 'mc_verbs*': listed by
#      ucx_info, UD point-to-point, groups of 2..4 with forced loss, the
#      membership left, UCP over it) and mc_mlx5's (not listed on rxe0,
#      its device tests skip: no mlx5 device) in the first of two guests;
#      then UCG across the two guests with mc_verbs between them and 10 %
#      forced loss (test/vm/ucg.sh: test/mpi/ucg_hosts's bcast and
#      allreduce, results, printed plans and counters checked; the MPI
#      suite's quick world-only matrix on 2 ranks with coll/ucg forced);
#      skipped where 'contrib/vmbed.sh check' fails (no QEMU, no kernel
#      package)
#   6. Debian 13's Open MPI 5.0.7: contrib/ompi5-stack.sh builds it once
#      from the trixie source package into a cache outside the clone
#      (/var/cache/ucx-o2m/openmpi-5.0.7, O2M_OMPI5_CACHE), against Debian
#      12's UCX 1.13.1 (a cold run builds it: 22 min measured on the 2
#      loaded cores of this project's machine; a warm one checks its
#      stamp: about 1 s); build-ompi5/ is configured
#      --with-ompi=<it> (coll/ucg and test/mpi built against it), and the
#      MPI suite runs there with its mpirun (test/mpi/run.sh -n '2 3 4',
#      coll/ucg forced, the persistent collectives of coll_persist too;
#      2.5-4 min on the loaded machine, plus about 3 min to configure and
#      build build-ompi5/ the first time); SKIPPED with the reason where the stack cannot be built (no root,
#      no source package).  Debian 13's UCX 1.18.1 is SKIPPED: its source
#      package is not served here (contrib/ompi5-stack.sh --ucx118 checks
#      again and says why)
#   7. test/fuzz/fuzz.sh: the libFuzzer targets of the shared-memory checks
#      (o2m_check.c) and of the multicast engine's packets (mc/rel/), built
#      with clang against build/'s configuration, run for O2M_FUZZ_SECONDS
#      (60) and O2M_FUZZ_MC_SECONDS (30), and of the tuning rules parser
#      (src/ucg/ucg_rules.c) for O2M_FUZZ_RULES_SECONDS (20); fails on a
#      crash; then contrib/plot-mpi.py --self-test (the benchmark's
#      comparison with the best baseline, on made-up data) and
#      contrib/scale-model.py --self-test (the scaling model's formulas)
#   8. configure build-asan/ with --enable-sanitizers (ASan + UBSan), build,
#      run the same gtest suite and ucg_p2p_sim there
#
# Exits non-zero when any step fails; prints a summary at the end.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$top"

# --- the gtest binary and its arguments (one place) ---
GTEST_BIN=test/gtest/o2m_gtest            # relative to a build dir
SIM_BIN=test/gtest/ucg_p2p_sim            # (gtest arguments not passed)
GTEST_ARGS=("$@")
GTEST_TIMEOUT=${O2M_GTEST_TIMEOUT:-1800}  # seconds, per run (guard only)
BUILD=$top/build
BUILD_ASAN=$top/build-asan
BUILD_OMPI5=$top/build-ompi5
JOBS=$(nproc)

# Sanitizer run-time options for the ASan build.  Leak checking is on; the
# suppression file holds UCX-internal leaks only (see its header).
ASAN_RUN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
LSAN_RUN_OPTIONS="suppressions=$top/contrib/lsan.supp:print_suppressions=0"
UBSAN_RUN_OPTIONS="print_stacktrace=1:halt_on_error=1"

say() { echo "=== test.sh: $*"; }

steps=()
results=()
times=()
failed=0

# run_step NAME COMMAND...: runs it, records PASS/FAIL and the duration
run_step() {
    local name=$1; shift
    local start=$SECONDS rc=0
    say "BEGIN $name"
    "$@" || rc=$?
    steps+=("$name"); times+=($((SECONDS - start)))
    if [ $rc -eq 0 ]; then
        results+=("PASS")
        say "END   $name: PASS ($((SECONDS - start)) s)"
    else
        results+=("FAIL (rc=$rc)")
        failed=1
        say "END   $name: FAIL rc=$rc ($((SECONDS - start)) s)" >&2
    fi
    return $rc
}

skip_step() {
    steps+=("$1"); results+=("NOT RUN (an earlier step failed)"); times+=(0)
}

# skip_reason NAME RESULT: a step that cannot run on this machine
skip_reason() {
    steps+=("$1"); results+=("$2"); times+=(0)
    say "SKIP  $1: $2"
}

summary() {
    local rc=$1
    echo
    echo "==================== ucx-o2m test summary ===================="
    local i
    for i in "${!steps[@]}"; do
        printf '  %-32s %-36s %5s s\n' "${steps[$i]}" "${results[$i]}" "${times[$i]}"
    done
    echo "  total: $SECONDS s"
    if [ $failed -eq 0 ] && [ "$rc" -eq 0 ]; then
        echo "  RESULT: PASS"
    else
        echo "  RESULT: FAIL"
    fi
    echo "=============================================================="
}

build_gtest() {
    local dir=$1 bin
    # (set -e does not apply inside a function called from 'if'/'||')
    make -C "$dir/test/gtest" -j"$JOBS" o2m_gtest ucg_p2p_sim || return 1
    for bin in "$GTEST_BIN" "$SIM_BIN"; do
        if [ ! -x "$dir/$bin" ]; then
            echo "test.sh: $dir/$bin was not built" >&2
            return 1
        fi
    done
}

run_gtest() {
    local dir=$1
    [ -x "$dir/$GTEST_BIN" ] || { echo "test.sh: $dir/$GTEST_BIN missing" >&2; return 1; }
    (cd "$dir" && timeout -k 30 "$GTEST_TIMEOUT" "./$GTEST_BIN" "${GTEST_ARGS[@]}")
}

# The build/ gtest run has an unrelated, busy Open MPI job beside it
# (test/mpi/mpi_busy, 2 ranks over vader, with its /dev/shm files): the
# suite must look only at what the project creates.  The job is started
# before and stopped after the run (every wait bounded); it fails the step
# if it did not run or got wrong results.  O2M_TEST_BUSY_MPI=0: without it.
run_gtest_beside_mpi() {
    local dir=$1 tmp pid rc=0 i
    [ "${O2M_TEST_BUSY_MPI:-1}" = 1 ] || { run_gtest "$dir"; return; }
    make -s -C "$dir/test/mpi" mpi_busy || return 1
    tmp=$(mktemp -d /tmp/ucx-o2m-busy.XXXXXX)
    timeout -k 10 $((GTEST_TIMEOUT + 120)) mpirun --allow-run-as-root \
        --oversubscribe -np 2 --mca pml ob1 --mca btl self,vader \
        "$dir/test/mpi/mpi_busy" $((GTEST_TIMEOUT + 60)) "$tmp/stop" \
        >"$tmp/log" 2>&1 &
    pid=$!
    for i in $(seq 60); do   # its segments exist once it runs
        compgen -G '/dev/shm/vader_segment.*' >/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.5
    done
    if ! compgen -G '/dev/shm/vader_segment.*' >/dev/null; then
        echo "test.sh: the busy MPI job did not start:" >&2
        rc=1
    else
        run_gtest "$dir" || rc=$?
    fi
    touch "$tmp/stop"
    for i in $(seq 80); do
        kill -0 $pid 2>/dev/null || break
        [ $i -ne 60 ] || kill -TERM $pid 2>/dev/null  # timeout passes it on
        sleep 0.5
    done
    if ! wait $pid || ! grep -q ' 0 wrong results' "$tmp/log"; then
        echo "test.sh: the busy MPI job failed:" >&2
        [ $rc -ne 0 ] || rc=1
    fi
    grep -v '^$' "$tmp/log" | tail -5
    rm -rf "$tmp"
    return $rc
}

run_gtest_asan() {
    ASAN_OPTIONS=$ASAN_RUN_OPTIONS LSAN_OPTIONS=$LSAN_RUN_OPTIONS \
        UBSAN_OPTIONS=$UBSAN_RUN_OPTIONS run_gtest "$1"
}

run_sim() {
    local dir=$1
    [ -x "$dir/$SIM_BIN" ] || { echo "test.sh: $dir/$SIM_BIN missing" >&2; return 1; }
    (cd "$dir" && timeout -k 30 "$GTEST_TIMEOUT" "./$SIM_BIN")
}

run_sim_asan() {
    ASAN_OPTIONS=$ASAN_RUN_OPTIONS LSAN_OPTIONS=$LSAN_RUN_OPTIONS \
        UBSAN_OPTIONS=$UBSAN_RUN_OPTIONS run_sim "$1"
}

# The MPI suite (test/mpi) with coll/ucg forced, and proof that it served
# the collectives (its counter lines).  build/ only: a component built with
# sanitizers cannot load into the uninstrumented MPI processes.
# RUNNER is test/mpi/run.sh or test/mpi/run-multihost.sh, with its options.
run_mpi() {
    local dir=$1 so comp rc
    shift
    make -C "$dir" -j"$JOBS" >/dev/null || return 1
    so="$dir/src/ompi/coll/ucg/.libs/mca_coll_ucg.so"
    [ -f "$so" ] || { echo "test.sh: $so was not built (Open MPI devel headers?)" >&2; return 1; }
    # Open MPI does not load a component from a libtool .libs directory
    comp=$(mktemp -d /tmp/ucx-o2m-comp.XXXXXX)
    ln -s "$(readlink -f "$so")" "$comp/"
    MPI_TEST_EXPECT_UCG=1 bash "$@" --ucg-path "$comp" --build-dir "$dir" -- \
        --mca coll ucg,basic,libnbc,tuned,self
    rc=$?
    rm -rf "$comp"
    return $rc
}

# Debian 13's stack (step 6): Open MPI 5.0.7 from the cache (built on first
# use), coll/ucg and the MPI programs built against it in build-ompi5/, the
# MPI suite with its mpirun; UCX 1.18.1 skipped with the reason
run_ompi5() {
    local out rc=0 prefix why start=$SECONDS name="Open MPI 5.0.7 (cache)"
    out=$(mktemp)
    say "BEGIN $name"
    bash contrib/ompi5-stack.sh >"$out" 2>&1 || rc=$?
    tail -n 3 "$out"
    if [ $rc -eq 3 ]; then
        # the machine cannot provide it: not a failure of the project
        why=$(sed -n 's/^ompi5-stack: cannot build here: //p' "$out" |
              head -n 1)
        skip_reason "$name" "SKIPPED ($why)"
        skip_reason "bootstrap (build-ompi5/)" "SKIPPED (no Open MPI 5.0.7)"
        skip_reason "MPI suite, Open MPI 5 (build-ompi5/)" \
            "SKIPPED (no Open MPI 5.0.7)"
    elif [ $rc -ne 0 ]; then
        steps+=("$name"); results+=("FAIL (rc=$rc)")
        times+=($((SECONDS - start)))
        failed=1
        say "END   $name: FAIL rc=$rc ($((SECONDS - start)) s)" >&2
        skip_step "bootstrap (build-ompi5/)"
        skip_step "MPI suite, Open MPI 5 (build-ompi5/)"
    else
        steps+=("$name"); results+=("PASS"); times+=($((SECONDS - start)))
        say "END   $name: PASS ($((SECONDS - start)) s)"
        prefix=$(tail -n 1 "$out")
        if run_step "bootstrap (build-ompi5/)" build_ompi5 "$prefix"; then
            run_step "MPI suite, Open MPI 5 (build-ompi5/)" run_mpi \
                "$BUILD_OMPI5" test/mpi/run.sh -n "2 3 4" || true
        else
            skip_step "MPI suite, Open MPI 5 (build-ompi5/)"
        fi
    fi
    rm -f "$out"
    # Debian 13's UCX: checked again each run
    if why=$(bash contrib/ompi5-stack.sh --ucx118 2>&1 >/dev/null); then
        skip_reason "UCX 1.18.1 (Debian 13)" "SKIPPED (its source package is served now; the project does not build against it yet)"
    else
        skip_reason "UCX 1.18.1 (Debian 13)" "SKIPPED (${why#ompi5-stack: })"
    fi
}

# build-ompi5/: configured against Open MPI 5 at $1 once (later runs only
# make: automake reruns configure with the same arguments when needed)
build_ompi5() {
    if [ -f "$BUILD_OMPI5/config.status" ] &&
       grep -q -- "--with-ompi=$1" "$BUILD_OMPI5/config.status"; then
        make -C "$BUILD_OMPI5" -j"$JOBS" >/dev/null
    else
        bash contrib/bootstrap.sh --build-dir "$BUILD_OMPI5" -- \
            --with-ompi="$1"
    fi
}

# The multi-host bed's self-test (test/multihost/selftest.sh: separate
# hosts, traffic, loss rules, teardown), then the MPI suite across hosts: a
# bed of 3 network-namespace hosts, the quick matrix on 2 and 3 hosts x 1
# and 2 ranks, coll_kill; skipped (not failed) where the bed cannot be made
run_mpi_hosts() {
    if ! bash contrib/multihost.sh check; then
        skip_reason "multi-host bed self-test" "SKIPPED (no namespaces here)"
        skip_reason "mc_udp across hosts (build/)" \
            "SKIPPED (no namespaces here)"
        skip_reason "MPI across hosts (build/)" \
            "SKIPPED (no namespaces here)"
        skip_reason "MPI across hosts, mc_udp, 10 % loss (build/)" \
            "SKIPPED (no namespaces here)"
        return 0
    fi
    run_step "multi-host bed self-test" timeout -k 10 300 \
        bash test/multihost/selftest.sh || true
    run_step "mc_udp across hosts (build/)" timeout -k 10 600 \
        bash test/multihost/mc_udp.sh "$1" || true
    run_step "MPI across hosts (build/)" run_mpi "$1" \
        test/mpi/run-multihost.sh -q -x -t 120 || true
    # UCG's broadcasts between hosts on mc_udp, 10 % of every host's UDP
    # dropped: results exact, mc_udp carried them, losses repaired; the
    # MPMD case of differing rules files (-r: its 400 KB bcasts of root 2
    # cross hosts on multicast); the OSU-style benchmark; kills, among them
    # a leader in a bcast loop
    run_step "MPI across hosts, mc_udp, 10 % loss (build/)" run_mpi "$1" \
        test/mpi/run-multihost.sh -q -x -r -b -L "2x2 3x1" --mc --loss 10 \
        -t 120 || true
}

# The Soft-RoCE VM bed's self-test; skipped (not failed) with check's
# reason where guests cannot run here.  The check fetches Debian's kernel
# package on its first run (cached, see contrib/vmbed.sh): a row of its own
# in the summary, so that the self-test's time is the guests' only.
run_vm_bed() {
    local why start=$SECONDS
    say "BEGIN VM bed check"
    if ! why=$(bash contrib/vmbed.sh check 2>&1); then
        echo "$why"
        why=$(tail -n 1 <<<"$why")
        skip_reason "VM bed self-test (Soft-RoCE)" "SKIPPED (${why#vmbed: })"
        skip_reason "mc_verbs on Soft-RoCE (build/)" "SKIPPED (${why#vmbed: })"
        skip_reason "UCG/MPI across guests, mc_verbs (build/)" \
            "SKIPPED (${why#vmbed: })"
        return 0
    fi
    echo "$why"
    steps+=("VM bed check (kernel cache)"); results+=("PASS")
    times+=($((SECONDS - start)))
    run_step "VM bed self-test (Soft-RoCE)" timeout -k 10 3600 \
        bash test/vm/selftest.sh || true
    run_step "mc_verbs on Soft-RoCE (build/)" run_mc_verbs_vm "$1" || true
    # UCG (bcast, allreduce) and the MPI suite with coll/ucg across the two
    # guests, mc_verbs between them with forced losses (test/vm/ucg.sh)
    run_step "UCG/MPI across guests, mc_verbs (build/)" \
        timeout -k 10 1500 bash test/vm/ucg.sh "$1" || true
}

# mc_verbs's device tests (o2m_gtest mc_verbs*) in the first of two
# Soft-RoCE guests: they must run, not skip for want of a device (guest 1
# waits at the end barrier while mc_verbs.group_two_guests starts its
# members there with vmbed-exec: groups across the two guests); and
# mc_mlx5's (mc_mlx5*): rxe is not mlx5, so mc_mlx5 is not listed on it
# (mc_mlx5_plugin.only_on_mlx5) and its device tests skip, saying so
run_mc_verbs_vm() {
    local gtest=$1/test/gtest/o2m_gtest log rc
    log=$(mktemp)
    timeout -k 10 1000 bash contrib/vmbed.sh run -n 2 --timeout 900 -- bash -c '
        rc=0
        if [ "$VMBED_INDEX" = 0 ]; then
            "$0" --gtest_filter="mc_verbs*:mc_mlx5*" || rc=$?
        fi
        vmbed-sync -t 880 barrier end
        exit $rc' "$gtest" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ] && grep -q '\[  SKIPPED \] mc_verbs\|\[  SKIPPED \] mc_mlx5_plugin' "$log"; then
        echo "test.sh: mc_verbs device tests were skipped in the guest"
        rc=1
    fi
    rm -f "$log"
    return "$rc"
}

trap 'summary $?' EXIT

# name and "stop the rest on failure" for every step, in order
if ! run_step "bootstrap (build/)" bash contrib/bootstrap.sh --build-dir "$BUILD"; then
    for s in "gtest build (build/)" "gtest run (build/)" "ucg_p2p_sim (build/)" \
             "check-install" "bootstrap (build-asan/)" "gtest build (build-asan/)" \
             "gtest run (build-asan/)" "ucg_p2p_sim (build-asan/)"; do
        skip_step "$s"
    done
    exit 1
fi

if run_step "gtest build (build/)" build_gtest "$BUILD"; then
    run_step "gtest run (build/)" run_gtest_beside_mpi "$BUILD" || true
    run_step "ucg_p2p_sim (build/)" run_sim "$BUILD" || true
else
    skip_step "gtest run (build/)"
    skip_step "ucg_p2p_sim (build/)"
fi

run_step "check-install" bash contrib/check-install.sh "$BUILD" || true
run_step "MPI suite, coll/ucg (build/)" run_mpi "$BUILD" test/mpi/run.sh ||
    true
# The two-level host-local bcast applies from 32 processes per host by
# default: forced here on hosts of 4 and 5 (docs/ucg.md)
run_mpi_2level() {
    (export MPIRUN_ARGS="${MPIRUN_ARGS:-} -x UCX_UCG_SM_BCAST_2LEVEL_PPN=2"
     run_mpi "$@")
}
run_step "MPI suite, coll/ucg, two-level bcast (build/)" run_mpi_2level \
    "$BUILD" test/mpi/run.sh -n "4 5" -q -x || true
run_mpi_hosts "$BUILD"
run_vm_bed "$BUILD"
run_ompi5
run_step "fuzz shared-memory checks" bash test/fuzz/fuzz.sh "$BUILD" \
    "${O2M_FUZZ_SECONDS:-60}" o2m_check || true
run_step "fuzz multicast packets" bash test/fuzz/fuzz.sh "$BUILD" \
    "${O2M_FUZZ_MC_SECONDS:-30}" mc_rel || true
run_step "fuzz tuning rules" bash test/fuzz/fuzz.sh "$BUILD" \
    "${O2M_FUZZ_RULES_SECONDS:-20}" ucg_rules || true
run_step "benchmark report self-test" python3 contrib/plot-mpi.py \
    --self-test || true
run_step "scaling model self-test" python3 contrib/scale-model.py \
    --self-test || true

if run_step "bootstrap (build-asan/)" bash contrib/bootstrap.sh \
        --build-dir "$BUILD_ASAN" -- --enable-sanitizers; then
    if run_step "gtest build (build-asan/)" build_gtest "$BUILD_ASAN"; then
        run_step "gtest run (build-asan/)" run_gtest_asan "$BUILD_ASAN" || true
        run_step "ucg_p2p_sim (build-asan/)" run_sim_asan "$BUILD_ASAN" || true
    else
        skip_step "gtest run (build-asan/)"
        skip_step "ucg_p2p_sim (build-asan/)"
    fi
else
    skip_step "gtest build (build-asan/)"
    skip_step "gtest run (build-asan/)"
    skip_step "ucg_p2p_sim (build-asan/)"
fi

exit $failed
