#!/usr/bin/env bash
#
# MPI_Bcast and MPI_Allreduce across hosts of the multi-host bed
# (contrib/multihost.sh), OSU methodology (contrib/bench-mpi.sh): for each
# number of hosts, four configurations side by side in one run
# (interleaved repetitions, medians):
#   ucg_p2p  coll/ucg, point-to-point only between hosts (UCX_UCG_MC=no)
#   ucg_mc   coll/ucg, broadcasts between host leaders on mc_udp at every
#            size (UCX_UCG_MC=yes, UCX_UCG_MC_MAX_SIZE=inf)
#   ob1      Open MPI's default: pml ob1 (btl tcp) + coll tuned
#   ucx      pml ucx + coll tuned
# Ratios are against ucg_p2p.  Run contrib/bootstrap.sh first; as root.
#
#   contrib/bench-mpi-hosts.sh [-H "2 3 4"] [-p PPN] [--loss PCT]
#       [--build-dir DIR] [-o OUTDIR] [-- bench-mpi.sh options]
#   -H LIST    numbers of hosts (default "2 3 4"), one rank per host
#              unless -p
#   -p PPN     ranks per host (default 1)
#   --loss P   every host drops P % of the UDP packets it receives (mc_udp's
#              multicast and control; the TCP of the other configurations
#              and of UCP is not touched)
#   -o DIR     results (default BUILD_DIR/bench-mpi-hosts): DIR/hosts-N/
#              holds bench-mpi.sh's CSV, table and plot for N hosts
#   after --   passed to bench-mpi.sh (default: -c bcast,allreduce
#              -s 8:1m -i 200 -I 50 -r 3)
#
# The hosts share this machine's cores: with more ranks than cores the
# numbers measure the scheduler too (the table says the load; see
# docs/performance.md).
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
hosts_list="2 3 4"
ppn=1
loss=0
build_dir=$top/build
out=""
bench_args=(-c bcast,allreduce -s 8:1m -i 200 -I 50 -r 3)
die() { echo "bench-mpi-hosts: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case "$1" in
    -H) hosts_list="$2"; shift 2 ;;
    -p) ppn="$2"; shift 2 ;;
    --loss) loss="$2"; shift 2 ;;
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    -o) out=$(readlink -m "$2"); shift 2 ;;
    --) shift; [ $# -gt 0 ] && bench_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help)" ;;
    esac
done
[[ $ppn =~ ^[1-9][0-9]*$ ]] || die "bad -p '$ppn'"
[[ $loss =~ ^[0-9]+$ ]] && [ "$loss" -le 100 ] || die "bad --loss '$loss'"
for h in $hosts_list; do
    [[ $h =~ ^[1-9][0-9]*$ ]] || die "bad host count '$h'"
done
out=${out:-$build_dir/bench-mpi-hosts}

so=$build_dir/src/ompi/coll/ucg/.libs/mca_coll_ucg.so
[ -f "$so" ] || die "$so not built (contrib/bootstrap.sh)"
make -s -C "$build_dir/test/mpi" coll_bench >/dev/null ||
    die "cannot build coll_bench in $build_dir/test/mpi"
bash "$top/contrib/multihost.sh" check >/dev/null 2>&1 ||
    die "the multi-host bed cannot be made here (root?)"

# Open MPI does not load a component from a libtool .libs directory
comp=$(mktemp -d /tmp/ucx-o2m-comp.XXXXXX)
trap 'rm -rf "$comp"' EXIT
ln -s "$(readlink -f "$so")" "$comp/"
mp="--mca mca_base_component_path $comp:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
ucg="$mp --mca coll ucg,basic,libnbc,tuned,self"

mkdir -p "$out"
for n in $hosts_list; do
    hl=$(seq -s, -f "h%g:$ppn" 1 "$n")
    lopt=()
    if [ "$loss" -gt 0 ]; then
        for i in $(seq "$n"); do lopt+=(-l "h$i,$loss,udp"); done
    fi
    echo "=== $n hosts x $ppn ranks, $loss % UDP loss: --host $hl"
    bash "$top/contrib/multihost.sh" run -n "$n" "${lopt[@]}" -- \
        bash "$top/contrib/bench-mpi.sh" -n $((n * ppn)) "${bench_args[@]}" \
        --build-dir "$build_dir" -o "$out/hosts-$n" \
        -C "ucg_p2p=--host $hl $ucg -x UCX_UCG_MC=no" \
        -C "ucg_mc=--host $hl $ucg -x UCX_UCG_MC=yes -x UCX_UCG_MC_MAX_SIZE=inf" \
        -C "ob1=--host $hl --mca pml ob1 --mca coll ^ucg" \
        -C "ucx=--host $hl --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca coll ^ucg" \
        2>&1 | tee "$out/hosts-$n.txt"
done
echo "bench-mpi-hosts: results in $out"
