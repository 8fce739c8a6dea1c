#!/usr/bin/env bash
#
# The hardware suite: ucx-o2m's tests and benchmarks on a real InfiniBand
# or RoCE cluster (docs/hardware.md).  Run it from the build tree's source
# checkout on the first host; every step is bounded by a time limit, logs
# into the results directory, and ends with one summary line
# (PASS, FAIL or SKIP and why).  The results directory and its tarball are
# what to send back.
#
#   contrib/hw-suite.sh [-H HOST1,HOST2,...] [-p PPN] [-s STEPS]
#                       [-t SECONDS] [-o OUTDIR] [--build-dir DIR]
#                       [--netdev IFACE] [-n|--dry-run] [-h|--help]
#   -H LIST    hosts of the cross-host steps (mpirun --host), this one
#              first; without -H (or with one host) they are skipped
#   -p PPN     MPI ranks per host (default 1)
#   -s STEPS   comma-separated steps to run (default: all, in this order):
#                devices  the RDMA devices, their drivers and ports (an
#                         mlx5 device is what mc_mlx5 runs on)
#                info     ucx_info -d with the plugin lists mc_verbs on
#                         every active port, mc_mlx5 on the mlx5 ones only
#                gtest    o2m_gtest's IB multicast tests on this host
#                         (mc_ib_wire*:mc_verbs*:mc_mlx5*; groups of 2..4
#                         processes, every root, 8 B..4 KiB, forced
#                         losses, p2p, UCP tag); the device tests must run,
#                         not skip, on the devices found
#                mpi      the MPI suite across the hosts with coll/ucg
#                         (test/mpi/run.sh -q -x, MPI_TEST_EXPECT_UCG=1)
#                ucg      the same with UCG's multicast between host
#                         leaders at every size (UCX_UCG_MC=yes); prints
#                         the transport UCG reported for it
#                bench    MPI_Bcast/MPI_Allreduce latency across the hosts
#                         (contrib/bench-mpi.sh, medians of interleaved
#                         repetitions): coll/ucg point-to-point, coll/ucg
#                         multicast, pml ucx + tuned, pml ob1 + tuned
#                mc_perf  ucx_mc_perf -q (mc_udp: repair and fan-out data
#                         check) on this host's --netdev
#   -t SEC     time limit of each step (default 1800)
#   -o DIR     results (default ./hw-suite-HOST-DATE); DIR.tar.gz at the end
#   --build-dir DIR  the configured and built tree (default build/)
#   --netdev IFACE   network interface of the RDMA port for mc_perf
#              (default: the first active port's, from its GID table)
#   -n, --dry-run  print what each step would run and what it needs; runs
#              nothing, needs no device
#
# Exit status: 0 every step run passed, 1 a step failed, 2 bad usage,
# 77 no RDMA device here (the message says what was looked for).
# Environment: HW_SUITE_SYSFS (default /sys/class/infiniband) is where the
# devices are looked for (the project's tests point it at a fake tree).
#
set -uo pipefail

prog=hw-suite
top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
sysfs=${HW_SUITE_SYSFS:-/sys/class/infiniband}
all_steps="devices,info,gtest,mpi,ucg,bench,mc_perf"
hosts=""
ppn=1
steps=$all_steps
limit=1800
out=""
build_dir=$top/build
netdev=""
dry=0

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die()   { echo "$prog: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
    -H|--hosts) [ $# -ge 2 ] || die "$1 needs a value"; hosts=$2; shift 2 ;;
    -p|--ppn) [ $# -ge 2 ] || die "$1 needs a value"; ppn=$2; shift 2 ;;
    -s|--steps) [ $# -ge 2 ] || die "$1 needs a value"; steps=$2; shift 2 ;;
    -t|--timeout) [ $# -ge 2 ] || die "$1 needs a value"; limit=$2; shift 2 ;;
    -o|--out) [ $# -ge 2 ] || die "$1 needs a value"; out=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "$1 needs a value"
                 build_dir=$(readlink -m "$2"); shift 2 ;;
    --netdev) [ $# -ge 2 ] || die "$1 needs a value"; netdev=$2; shift 2 ;;
    -n|--dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (--help)" ;;
    esac
done

[[ $ppn =~ ^[1-9][0-9]{0,2}$ ]] || die "bad -p '$ppn' (ranks per host, 1..999)"
[[ $limit =~ ^[1-9][0-9]*$ ]] || die "bad -t '$limit' (seconds)"
for s in ${steps//,/ }; do
    case ",$all_steps," in
    *",$s,"*) ;;
    *) die "unknown step '$s' (steps: $all_steps)" ;;
    esac
done
host_list=()
if [ -n "$hosts" ]; then
    IFS=, read -r -a host_list <<<"$hosts"
    for h in "${host_list[@]}"; do
        [[ $h =~ ^[A-Za-z0-9._-]+$ ]] || die "bad host name '$h' in -H"
    done
fi
nhosts=${#host_list[@]}
[ -n "$netdev" ] && { [[ $netdev =~ ^[A-Za-z0-9._@-]+$ ]] ||
                      die "bad --netdev '$netdev'"; }
out=${out:-$PWD/hw-suite-$(hostname -s)-$(date +%Y%m%d-%H%M%S)}

gtest=$build_dir/test/gtest/o2m_gtest
plugin=$build_dir/src/uct/.libs/libuct_o2m.so
coll_so=$build_dir/src/ompi/coll/ucg/.libs/mca_coll_ucg.so
mc_perf=$build_dir/src/tools/ucx_mc_perf
sysdir=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3

failed=0
summary() {
    local verdict=$2
    [ "$dry" = 1 ] && [ "$verdict" = PASS ] && verdict="DRY (not run)"
    echo "$prog: $1: $verdict"
    [ "$dry" = 1 ] || echo "$1: $verdict" >>"$out/summary.txt"
    case "$verdict" in FAIL*) failed=1 ;; esac
}

# Run "$@" bounded by the step's limit, its output in $out/$step.log (and
# on the terminal); with --dry-run only print it
run() {
    local step=$1; shift
    if [ "$dry" = 1 ]; then
        printf '  would run: timeout %s' "$limit"
        printf ' %q' "$@"
        echo
        return 0
    fi
    echo "+ $*" >>"$out/$step.log"
    timeout -k 30 "$limit" "$@" 2>&1 | tee -a "$out/$step.log"
    return "${PIPESTATUS[0]}"
}

# --- devices ------------------------------------------------------------
# Each line: "DEV DRIVER PORT STATE LINK_LAYER"
devices=()
mlx5_devs=()
scan_devices() {
    local d p drv state ll
    for d in "$sysfs"/*; do
        [ -d "$d/ports" ] || continue
        drv=$(basename "$(readlink "$d/device/driver" 2>/dev/null)" 2>/dev/null)
        # a software device (rdma_rxe, siw): no driver, a parent netdev
        [ -z "$drv" ] && [ -r "$d/parent" ] && drv=software
        for p in "$d"/ports/*; do
            [ -e "$p/state" ] || continue
            state=$(awk '{ print $2 }' "$p/state" 2>/dev/null)
            ll=$(cat "$p/link_layer" 2>/dev/null || echo "?")
            devices+=("$(basename "$d") ${drv:-?} $(basename "$p") ${state:-?} $ll")
        done
        [ "$drv" = mlx5_core ] && mlx5_devs+=("$(basename "$d")")
    done
}
scan_devices

# The network interface of the first active port's first RoCE v2 IPv4 GID
# (or of any GID with an interface: IPoIB is found by ucx_info's port)
first_netdev() {
    local line dev port g
    for line in "${devices[@]}"; do
        set -- $line
        [ "$4" = ACTIVE ] || continue
        dev=$1; port=$3
        for g in "$sysfs/$dev/ports/$port/gid_attrs/ndevs/"*; do
            [ -r "$g" ] && cat "$g" 2>/dev/null && return 0
        done
    done
    return 1
}

step_devices() {
    local line
    echo "== devices ($sysfs)"
    if [ ${#devices[@]} -eq 0 ]; then
        echo "$prog: no RDMA device on this host: $sysfs has no device with" \
             "ports; the suite needs an InfiniBand or RoCE port (an mlx5" \
             "one for mc_mlx5: ConnectX; Soft-RoCE, rdma_rxe, runs mc_verbs" \
             "only).  Check 'ibv_devices', 'rdma link' and the driver" \
             "modules (mlx5_ib, ib_ipoib / rdma_rxe)."
        return 77
    fi
    for line in "${devices[@]}"; do
        echo "  $line"
    done
    if [ ${#mlx5_devs[@]} -gt 0 ]; then
        echo "  mlx5 devices (mc_mlx5 runs there): ${mlx5_devs[*]}"
    else
        echo "  no mlx5 device: mc_mlx5's device tests will be skipped"
    fi
    [ "$dry" = 1 ] && return 0
    {
        echo "== uname"; uname -a
        echo "== ucx_info -v"; ucx_info -v 2>&1
        echo "== ompi_info --version"; ompi_info --version 2>&1 | head -3
        echo "== ibv_devinfo -v"; timeout 30 ibv_devinfo -v 2>&1
        echo "== rdma link"; timeout 30 rdma link 2>&1
    } >"$out/env.txt" 2>&1
    printf '%s\n' "${devices[@]}" >"$out/devices.txt"
    return 0
}

step_info() {
    local listing line dev port rc=0
    run info env LD_PRELOAD="$plugin" ucx_info -d || return 1
    [ "$dry" = 1 ] && return 0
    listing=$(awk '/Transport:/ { tl = $NF } /Device:/ { print tl, $NF }' \
              "$out/info.log")
    for line in "${devices[@]}"; do
        set -- $line
        [ "$4" = ACTIVE ] || continue
        dev=$1; port=$3
        if ! grep -qx "mc_verbs $dev:$port" <<<"$listing"; then
            echo "$prog: info: mc_verbs is not listed on $dev:$port"
            rc=1
        fi
        if [ "$2" = mlx5_core ] &&
           ! grep -qx "mc_mlx5 $dev:$port" <<<"$listing"; then
            echo "$prog: info: mc_mlx5 is not listed on $dev:$port (mlx5)"
            rc=1
        fi
        if [ "$2" != mlx5_core ] &&
           grep -qx "mc_mlx5 $dev:$port" <<<"$listing"; then
            echo "$prog: info: mc_mlx5 is listed on $dev:$port (not mlx5)"
            rc=1
        fi
    done
    return $rc
}

step_gtest() {
    local rc
    run gtest "$gtest" --gtest_filter='mc_ib_wire*:mc_verbs*:mc_mlx5*'
    rc=$?
    [ "$dry" = 1 ] && return 0
    [ $rc -eq 0 ] || return $rc
    # On the devices found, the device tests ran
    if grep -q '^\[  SKIPPED \] mc_verbs\.' "$out/gtest.log"; then
        echo "$prog: gtest: mc_verbs's device tests were skipped"
        return 1
    fi
    if [ ${#mlx5_devs[@]} -gt 0 ] &&
       grep -q '^\[  SKIPPED \] mc_mlx5\.' "$out/gtest.log"; then
        echo "$prog: gtest: mc_mlx5's device tests were skipped on an mlx5 host"
        return 1
    fi
    return 0
}

# coll/ucg from the build tree (a .libs directory does not load)
comp_dir=""
mpi_common() {
    if [ "$dry" = 1 ]; then
        comp_dir=$out/coll-ucg
        return 0
    fi
    [ -f "$coll_so" ] || { echo "$prog: $coll_so is not built"; return 1; }
    comp_dir=$out/coll-ucg
    mkdir -p "$comp_dir"
    ln -sf "$(readlink -f "$coll_so")" "$comp_dir/"
}

host_arg() {
    local h list=""
    for h in "${host_list[@]}"; do
        list+="${list:+,}$h:$ppn"
    done
    echo "$list"
}

step_mpi() {
    [ "$nhosts" -ge 2 ] || { echo "one host (-H)"; return 77; }
    mpi_common || return 1
    run mpi env MPI_TEST_EXPECT_UCG=1 \
        bash "$top/test/mpi/run.sh" -q -x -n $((nhosts * ppn)) \
        --ucg-path "$comp_dir" --build-dir "$build_dir" -- \
        --host "$(host_arg)" --mca coll ucg,basic,libnbc,tuned,self
}

step_ucg() {
    local rc
    [ "$nhosts" -ge 2 ] || { echo "one host (-H)"; return 77; }
    mpi_common || return 1
    run ucg env MPI_TEST_EXPECT_UCG=1 \
        bash "$top/test/mpi/run.sh" -q -x -n $((nhosts * ppn)) \
        --ucg-path "$comp_dir" --build-dir "$build_dir" -- \
        --host "$(host_arg)" --mca coll ucg,basic,libnbc,tuned,self \
        -x UCX_UCG_MC=yes -x UCX_UCG_MC_MAX_SIZE=inf -x UCX_LOG_LEVEL=diag
    rc=$?
    [ "$dry" = 1 ] && return 0
    echo "$prog: ucg: inter-host multicast reported by UCG:"
    grep -oE 'UCG: (mc_mlx5|mc_verbs|mc_udp)[^]]*' "$out/ucg.log" |
        sort | uniq -c | head -5
    return $rc
}

step_bench() {
    local hl ucg
    [ "$nhosts" -ge 2 ] || { echo "one host (-H)"; return 77; }
    mpi_common || return 1
    hl=$(host_arg)
    ucg="--mca mca_base_component_path $comp_dir:$sysdir --mca coll ucg,basic,libnbc,tuned,self"
    run bench bash "$top/contrib/bench-mpi.sh" -n $((nhosts * ppn)) \
        -c bcast,allreduce -s 8:1m -i 1000 -I 100 -r 3 -t "$limit" \
        --build-dir "$build_dir" -o "$out/bench" \
        -C "ucg_p2p=--host $hl $ucg -x UCX_UCG_MC=no" \
        -C "ucg_mc=--host $hl $ucg -x UCX_UCG_MC=yes -x UCX_UCG_MC_MAX_SIZE=inf" \
        -C "ucx=--host $hl --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca coll ^ucg" \
        -C "ob1=--host $hl --mca pml ob1 --mca coll ^ucg"
}

step_mc_perf() {
    local dev=$netdev
    if [ -z "$dev" ]; then
        dev=$(first_netdev) || dev=""
    fi
    if [ -z "$dev" ]; then
        [ "$dry" = 1 ] && dev=NETDEV || { echo "no --netdev"; return 77; }
    fi
    run mc_perf "$mc_perf" -q -d "$dev" -T $((limit / 2)) \
        -t repair,fanout -n 3,1 -r 2000
}

# --- main ----------------------------------------------------------------
if [ "$dry" = 1 ]; then
    echo "$prog: dry run: results would go to $out"
else
    mkdir -p "$out" || die "cannot make $out"
    : >"$out/summary.txt"
fi
echo "$prog: hosts: ${hosts:-$(hostname -s) (this one only)}, $ppn rank(s)" \
     "per host, steps $steps, $limit s per step, build $build_dir"

step_devices
rc=$?
if [ $rc -eq 77 ] && [ "$dry" = 0 ]; then
    summary devices "SKIP (no RDMA device)"
    exit 77
fi
found="${#devices[@]} port(s), ${#mlx5_devs[@]} mlx5 device(s)"
if [ "$dry" = 1 ]; then
    summary devices "DRY ($found found)"
else
    summary devices "PASS ($found)"
fi

step_out=$(mktemp /tmp/hw-suite-step.XXXXXX) || die "cannot make a file in /tmp"
trap 'rm -f "$step_out"' EXIT
for s in ${steps//,/ }; do
    [ "$s" = devices ] && continue
    echo "== $s"
    # the step's output on the terminal; its last line says why it skipped
    "step_$s" 2>&1 | tee "$step_out"
    rc=${PIPESTATUS[0]}
    why=$(tail -n 1 "$step_out")
    case $rc in
    0)  summary "$s" PASS ;;
    77) summary "$s" "SKIP ($why)" ;;
    *)  summary "$s" "FAIL (exit $rc; $out/$s.log)" ;;
    esac
done

if [ "$dry" = 0 ]; then
    tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")" &&
        echo "$prog: send back $out.tar.gz"
fi
exit $failed
