#!/bin/bash
#
# UCG and the MPI suite across the two guests of the Soft-RoCE VM bed
# (contrib/vmbed.sh run -n 2), mc_verbs between the guests' leaders, with
# forced losses: test/vm/guest-ucg.sh in both guests (what it checks is
# described there).  contrib/test.sh runs it.
#
#   test/vm/ucg.sh [BUILD_DIR]        (default: build)
#
# Builds test/mpi's ucg_hosts and coll_test in BUILD_DIR first, and gives
# the guests coll/ucg's component in a directory of its own.  Exits 0 when
# every check passed in both guests, 1 otherwise (a check that did not run
# counts as failed), 77 when the bed cannot run here.
# VMBED_TEST_STEP (400): bound of one mpirun in the guests; the run's
# --timeout is 3 steps and the boot.
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(readlink -m "${1:-$top/build}")
bed=$top/contrib/vmbed.sh
step=${VMBED_TEST_STEP:-400}
tmo=$((3 * step + 180))

if ! bash "$bed" check >/dev/null 2>&1; then
    echo "vm ucg: SKIPPED (the VM bed cannot run here: contrib/vmbed.sh" \
         "check)"
    exit 77
fi

. "$top/test/mpi/mpi_bin.sh"
mpi_bin_make "$build" ucg_hosts coll_test || exit 1
so=$build/src/ompi/coll/ucg/.libs/mca_coll_ucg.so
if [ ! -f "$so" ]; then
    echo "vm ucg: FAILED ($so was not built)"
    exit 1
fi

tmp=$(mktemp -d /tmp/ucx-o2m-vmucg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Open MPI does not load a component from a libtool .libs directory; the
# guests see the host's /tmp (their root is the host's, read-only)
mkdir "$tmp/comp"
ln -s "$(readlink -f "$so")" "$tmp/comp/"

start=$SECONDS
timeout -k 10 $((tmo + 60)) bash "$bed" run -n 2 --timeout "$tmo" -- \
    env VMBED_TEST_STEP="$step" VMBED_UCG_BUILD="$build" \
    VMBED_UCG_COMP="$tmp/comp" bash "$here/guest-ucg.sh" 2>&1 |
    tee "$tmp/out"
rc=${PIPESTATUS[0]}
# Each check ran (vm0's six lines, none failed) and both guests finished
npass=$(grep -c '^\[vm0\] guest-ucg: ok: ' "$tmp/out")
if [ "$rc" -eq 0 ] && [ "$npass" -eq 6 ] &&
   ! grep -q 'guest-ucg: FAIL' "$tmp/out" &&
   grep -q '^\[vm0\] guest-ucg: all passed$' "$tmp/out" &&
   grep -q '^\[vm1\] guest-ucg: all passed$' "$tmp/out"; then
    echo "vm ucg: PASSED ($npass checks in $((SECONDS - start)) s)"
    exit 0
fi
echo "vm ucg: FAILED (rc=$rc, $npass of 6 checks passed, in" \
     "$((SECONDS - start)) s)"
exit 1
