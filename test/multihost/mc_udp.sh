#!/bin/bash
#
# mc_udp across the hosts of the multi-host bed (contrib/multihost.sh), as
# root: one group, one rank per host, rank 0 the root, with real kernel
# packet loss (nftables) on the members' multicast and on the unicast
# control traffic.  Every message is checked byte for byte in order by
# every member (test/multihost/mc_udp_bcast.c); where loss was asked, the
# members must have sent NACKs and received repairs (the loss was real and
# repaired), and each member's repair histogram must hold its repairs.
#
#   test/multihost/mc_udp.sh [BUILD_DIR]      (default: build)
#
# Cases: 2 hosts no loss; 3 hosts, 10 % of h2's multicast and 10 % of h3's
# UDP; 4 hosts, 30 % of h2's UDP and 10 % of h1's (the root's) UDP; then
# the mc_udp benchmark's quick mode as a data check (mc_perf.sh).
# Prints one line per case; exits 0 when all pass, 1 otherwise, 77 when the
# bed cannot be made here.  Every run is bounded (-t and the program's own
# deadline).
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
bed="$top/contrib/multihost.sh"
libdir="$build/src/uct/.libs"

if ! bash "$bed" check >/dev/null 2>&1; then
    echo "mc_udp multi-host: SKIPPED (the bed cannot be made here)"
    exit 77
fi

tmp=$(mktemp -d /tmp/o2m-mc-udp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prog="$tmp/mc_udp_bcast"
if ! mpicc -O2 -Wall -I"$top/src/uct/sm/bcast" -o "$prog" \
        "$here/mc_udp_bcast.c" -L"$libdir" -Wl,-rpath,"$libdir" \
        -luct_o2m -luct -lucs; then
    echo "mc_udp multi-host: FAILED (cannot build mc_udp_bcast)"
    exit 1
fi

fails=0
# run_case NAME HOSTS COUNT EXPECT_NACKS [-l LOSS]...
run_case() {
    local name=$1 n=$2 count=$3 nacks=$4 hosts="" i out rc
    shift 4
    for ((i = 1; i <= n; ++i)); do
        hosts+="${hosts:+,}h$i:1"
    done
    out=$(timeout -k 10 150 bash "$bed" run -n "$n" -t 120 "$@" -- \
          mpirun --allow-run-as-root --host "$hosts" -np "$n" \
          "$prog" "$count" 90 "$((RANDOM * 65536 + RANDOM))" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] ||
       [ "$(grep -c 'messages exact' <<<"$out")" -ne "$n" ]; then
        echo "mc_udp multi-host $name: FAILED (exit $rc)"
        echo "$out" | tail -20 | sed 's/^/    /'
        fails=$((fails + 1))
        return
    fi
    if [ "$nacks" = y ] &&
       { ! grep 'received' <<<"$out" | grep -qv ' nack 0 ' ||
         ! grep 'received' <<<"$out" | grep -qv ' repaired 0 '; }; then
        echo "mc_udp multi-host $name: FAILED (loss asked, no NACK sent" \
             "or no repair received)"
        echo "$out" | tail -20 | sed 's/^/    /'
        fails=$((fails + 1))
        return
    fi
    echo "mc_udp multi-host $name: ok"
    grep 'rank 0:' <<<"$out" | sed 's/^/    /'
}

run_case "2 hosts, no loss" 2 2000 n
run_case "3 hosts, 10 % loss" 3 3000 y \
    -l h2,10,mcast -l h3,10,udp
run_case "4 hosts, 30 % loss" 4 3000 y \
    -l h2,30,udp -l h1,10,udp

# the benchmark's quick mode moves data too: it must arrive exact
bash "$here/mc_perf.sh" "$build"
case $? in
    0|77) ;;
    *) fails=$((fails + 1)) ;;
esac

[ $fails -eq 0 ]
