#!/bin/bash
#
# The mc_udp benchmark's quick mode across the multi-host bed, as root, as a
# data check (not a timing): ucx_mc_perf -q runs the repair stream to 3
# hosts with 10 % of h2's packets to the multicast port dropped, then one
# root to 1..3 hosts by multicast, mc_udp point-to-point and tcp; every
# receiver checks every message's sequence, length and payload words (the
# tool exits non-zero on any difference).  Passes when the tool succeeds and
# h2 received repairs (the loss was real and repaired).
#
#   test/multihost/mc_perf.sh [BUILD_DIR]      (default: build)
#
# Exits 0 on success, 1 on failure, 77 when the bed cannot be made here.
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
bed="$top/contrib/multihost.sh"
tool="$build/src/tools/ucx_mc_perf"
port=${UCX_MC_UDP_MCAST_PORT:-47011}

if ! bash "$bed" check >/dev/null 2>&1; then
    echo "mc_perf multi-host: SKIPPED (the bed cannot be made here)"
    exit 77
fi
if [ ! -x "$tool" ]; then
    echo "mc_perf multi-host: FAILED ($tool is not built)"
    exit 1
fi

# inside the bed's head: MULTIHOST_ID names the hosts' namespaces
out=$(timeout -k 10 200 bash "$bed" run -n 4 -t 180 -l "h2,10,udp:$port" -- \
      bash -c '"$0" -q -d eth0 -T 120 -t repair,fanout -n 3,1 -r 2000 \
               -N "$MULTIHOST_ID-h1,$MULTIHOST_ID-h2,$MULTIHOST_ID-h3,$MULTIHOST_ID-h4"' \
      "$tool" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    echo "mc_perf multi-host: FAILED (exit $rc)"
    echo "$out" | tail -20 | sed 's/^/    /'
    exit 1
fi
# the first repair table is N = 3; h2's row must show repairs
repaired=$(awk '/^Repair latency/ { t++ } t == 1 && $1 ~ /-h2$/ { print $2;
                exit }' <<<"$out")
if [ -z "$repaired" ] || [ "$repaired" -eq 0 ]; then
    echo "mc_perf multi-host: FAILED (10 % loss on h2, no repair received)"
    echo "$out" | tail -30 | sed 's/^/    /'
    exit 1
fi
echo "mc_perf multi-host: ok (data exact; h2 received $repaired repairs)"
