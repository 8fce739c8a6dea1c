#!/usr/bin/env bash
#
# mc_udp benchmark (ucx_mc_perf): one root to N receivers with an mc_udp
# group against N unicast sends (mc_udp point-to-point and UCX tcp), and
# the repair latency under real packet loss.  Run contrib/bootstrap.sh
# first.
#
#   contrib/bench-mc.sh [--build-dir DIR] [--no-make] [ucx_mc_perf options]
#       on this host's loopback (default N = 1,2,4,8 receiver processes:
#       above the CPU count the scheduler is measured too)
#   contrib/bench-mc.sh --bed [--build-dir DIR] [--no-make] [-q]
#       on the multi-host bed (contrib/multihost.sh, as root): 4 hosts, the
#       root on h1, one receiver per host; the repair latency with N = 3
#       and N = 1 at 0, 1, 10 and 30 % of h2's packets to the multicast
#       port dropped (nftables, udp:MCAST_PORT: first transmissions and
#       re-multicast repairs; unicast control and repairs pass), then one
#       root to N = 1..3 hosts without loss.  -q: little data (a data check
#       in about a minute, what test/multihost/mc_perf.sh runs).
#
# The output is also saved to DIR/bench-mc.txt (loopback) or
# DIR/bench-mc-bed.txt (bed, all runs).  docs/performance.md ("Reliable
# multicast (issue 12)") has the numbers of this machine.
#
set -euo pipefail

. "$(dirname "$(readlink -f "$0")")/bench-tool.sh"

if [ "${1:-}" != "--bed" ]; then
    if [[ " $* " != *" -n "* ]]; then
        set -- "$@" -n 1,2,4,8
    fi
    bench_tool_main bench-mc ucx_mc_perf bench-mc.txt "$@"
    exit 0
fi

shift
top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build_dir=$top/build
make_opt=()
quick=()
while [ $# -gt 0 ]; do
    case "$1" in
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    --no-make)   make_opt=(--no-make); shift ;;
    -q)          quick=(-q); shift ;;
    *)           bench_tool_die bench-mc "unknown option '$1' with --bed" ;;
    esac
done

bed="$top/contrib/multihost.sh"
bash "$bed" check >/dev/null 2>&1 ||
    bench_tool_die bench-mc "the multi-host bed cannot be made here (root?)"
port=${UCX_MC_UDP_MCAST_PORT:-47011}
id=$(bash "$bed" up -n 4) || bench_tool_die bench-mc "bed up failed"
trap 'bash "$bed" down "$id" >/dev/null 2>&1' EXIT INT TERM
ns="$id-h1,$id-h2,$id-h3,$id-h4"
out="$build_dir/bench-mc-bed.txt"
: >"$out"

# run_tool OUTPUT_NAME ucx_mc_perf options...
run_tool() {
    local name=$1
    shift
    bench_tool_main bench-mc ucx_mc_perf "$name" --build-dir "$build_dir" \
        "${make_opt[@]}" -d eth0 -N "$ns" -T 240 "${quick[@]}" "$@"
    cat "$build_dir/$name" >>"$out"
    rm -f "$build_dir/$name"
    make_opt=(--no-make)
}

for pct in 0 1 10 30; do
    if [ "$pct" -ne 0 ]; then
        bash "$bed" loss "$id" h2 "$pct" "udp:$port" >/dev/null
    fi
    run_tool bench-mc-run.txt -t repair -n 3,1 \
        -L "$pct % of h2's packets to port $port dropped"
    bash "$bed" stats "$id" 2>/dev/null | grep -i 'packets' | sed 's/^/  /' |
        tee -a "$out" || true
    bash "$bed" loss "$id" h2 off >/dev/null
done
run_tool bench-mc-run.txt -t fanout -n 1,2,3
echo "bench-mc: all bed runs saved to $out" >&2
