#!/usr/bin/env bash
#
# Run the UCG collective benchmark (ucg_perf) from the build tree and print
# its tables: every collective with the one-to-many transports (o2m) against
# point-to-point only (p2p, UCX_UCG_O2M=n), measured in the same run.
# Run contrib/bootstrap.sh first.
#
#   contrib/bench-ucg.sh [--build-dir DIR] [--no-make] [ucg_perf options...]
#
# Defaults of the tool: np 2,3,4,8; every collective; 8 B .. 1 MiB.  Other
# options go to the tool (contrib/bench-ucg.sh -h lists them), e.g.
#   contrib/bench-ucg.sh -n 2,4 -c bcast,allreduce -s 8,64,1K,8K,64K
#   contrib/bench-ucg.sh -q -o build/bench-ucg.csv
# The output is also saved to DIR/bench-ucg.txt.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build_dir="$top/build"
do_make=1

usage() {
    cat <<EOF
Usage: contrib/bench-ucg.sh [--build-dir DIR] [--no-make] [ucg_perf options]

Runs DIR/src/tools/ucg_perf (default DIR: $top/build) after bringing the
build up to date (make), and saves its output to DIR/bench-ucg.txt.

  --build-dir DIR  configured build tree (contrib/bootstrap.sh makes one)
  --no-make        do not run make first
  -h               this help and the options of ucg_perf

EOF
}

die() { echo "bench-ucg: ERROR: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
    --build-dir)
        [ $# -ge 2 ] || die "--build-dir needs a directory"
        build_dir=$(readlink -m "$2")
        shift 2
        ;;
    --no-make)
        do_make=0
        shift
        ;;
    *)
        break
        ;;
    esac
done

want_help=0
for arg in "$@"; do
    if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
        want_help=1
    fi
done

tool="$build_dir/src/tools/ucg_perf"

if [ "$want_help" -eq 1 ]; then
    usage
    if [ -x "$tool" ]; then
        exec "$tool" -h
    fi
    echo "(ucg_perf is not built yet in $build_dir: its options are shown" \
         "once it is)"
    exit 0
fi

[ -f "$build_dir/Makefile" ] ||
    die "no configured build in $build_dir: run contrib/bootstrap.sh first"

if [ "$do_make" -eq 1 ]; then
    # Brings the tool and the libraries up to date; quick when nothing
    # changed.
    make -C "$build_dir" -s -j"$(nproc)" >/dev/null ||
        die "make in $build_dir failed"
fi

[ -x "$tool" ] ||
    die "$tool was not built (is ucg_perf in src/tools/Makefile.am? re-run" \
        "contrib/bootstrap.sh)"

out="$build_dir/bench-ucg.txt"
echo "bench-ucg: $tool $*" >&2
echo "bench-ucg: output also saved to $out" >&2
set +e
"$tool" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || die "ucg_perf failed (exit status $rc), see $out"
