#!/usr/bin/env bash
#
# Transport benchmark: run ucx_o2m_perf (sm_bcast / sm_incast against
# posix) with sensible defaults and print its tables.  Run
# contrib/bootstrap.sh first.  The MPI-level comparison is
# contrib/bench-mpi.sh, the UCG-level one contrib/bench-ucg.sh.
#
#   contrib/bench.sh [--build-dir DIR] [ucx_o2m_perf options...]
#
# Defaults: group sizes 2,4,8; payloads 8 B .. 1 MiB; every test (cache-line
# reference, fan-out and fan-in latency, bandwidth); about 3-4 minutes on a
# 2-core machine.  Other options go to the tool (contrib/bench.sh -h lists
# them), e.g.  contrib/bench.sh -n 2 -s 8,64 -t cl,fanout
# The output is also saved to DIR/bench.txt.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build_dir="$top/build"

if [ $# -ge 2 ] && [ "$1" = "--build-dir" ]; then
    build_dir=$(readlink -m "$2")
    shift 2
fi

die() { echo "bench: ERROR: $*" >&2; exit 1; }

[ -f "$build_dir/Makefile" ] ||
    die "no configured build in $build_dir: run contrib/bootstrap.sh first"

# Brings the tool (and the plugin) up to date; quick when nothing changed.
make -C "$build_dir" -s -j"$(nproc)" >/dev/null ||
    die "make in $build_dir failed"

tool="$build_dir/src/tools/ucx_o2m_perf"
[ -x "$tool" ] || die "$tool was not built (re-run contrib/bootstrap.sh)"

for arg in "$@"; do
    if [ "$arg" = "-h" ]; then
        exec "$tool" -h
    fi
done

out="$build_dir/bench.txt"
echo "bench: $tool $*" >&2
echo "bench: output also saved to $out" >&2
set +e
"$tool" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || die "ucx_o2m_perf failed (exit status $rc)"
