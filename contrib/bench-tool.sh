#!/usr/bin/env bash
#
# Sourced by the benchmark wrappers of one tool of the build tree
# (contrib/bench.sh: ucx_o2m_perf, contrib/bench-ucg.sh: ucg_perf):
#
#   bench_tool_main NAME TOOL OUTPUT [--build-dir DIR] [--no-make] \
#                   [tool options]
#
# brings the build tree up to date (make), runs DIR/src/tools/TOOL with the
# tool options, prints its output and saves it to DIR/OUTPUT.  -h shows the
# wrapper's options and the tool's.  Exits non-zero when the tool fails.
#

bench_tool_main() {
    local name=$1 tool_name=$2 out_name=$3
    shift 3
    local top build_dir do_make=1 want_help=0 tool out rc arg

    top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
    build_dir="$top/build"

    while [ $# -gt 0 ]; do
        case "$1" in
        --build-dir)
            [ $# -ge 2 ] ||
                bench_tool_die "$name" "--build-dir needs a directory"
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

    for arg in "$@"; do
        if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
            want_help=1
        fi
    done

    tool="$build_dir/src/tools/$tool_name"
    if [ "$want_help" -eq 1 ]; then
        cat <<USAGE
Usage: contrib/$name.sh [--build-dir DIR] [--no-make] [$tool_name options]

Runs DIR/src/tools/$tool_name (default DIR: $top/build) after bringing the
build up to date (make), and saves its output to DIR/$out_name.

  --build-dir DIR  configured build tree (contrib/bootstrap.sh makes one)
  --no-make        do not run make first
  -h               this help and the options of $tool_name

USAGE
        if [ -x "$tool" ]; then
            exec "$tool" -h
        fi
        echo "($tool_name is not built yet in $build_dir: its options are" \
             "shown once it is)"
        exit 0
    fi

    [ -f "$build_dir/Makefile" ] ||
        bench_tool_die "$name" "no configured build in $build_dir: run" \
                       "contrib/bootstrap.sh first"

    if [ "$do_make" -eq 1 ]; then
        # Brings the tool and the libraries up to date; quick when nothing
        # changed.
        make -C "$build_dir" -s -j"$(nproc)" >/dev/null ||
            bench_tool_die "$name" "make in $build_dir failed"
    fi

    [ -x "$tool" ] ||
        bench_tool_die "$name" "$tool was not built (re-run" \
                       "contrib/bootstrap.sh)"

    out="$build_dir/$out_name"
    echo "$name: $tool $*" >&2
    echo "$name: output also saved to $out" >&2
    set +e
    "$tool" "$@" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" -eq 0 ] ||
        bench_tool_die "$name" "$tool_name failed (exit status $rc), see $out"
}

bench_tool_die() {
    local name=$1
    shift
    echo "$name: ERROR: $*" >&2
    exit 1
}
