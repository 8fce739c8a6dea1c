#!/usr/bin/env bash
#
# MPI collective latency (test/mpi/coll_bench, OSU methodology) for several
# Open MPI configurations, measured side by side IN ONE RUN: each repetition
# runs every configuration once (interleaved), and each point is the median
# over repetitions.  Each coll/ucg latency is compared with the BEST of Open
# MPI's own configurations at that size (named in the table), and every size
# where coll/ucg is slower beyond the A/A noise of that run is flagged
# (contrib/plot-mpi.py: SLOWER when ratio > 1 + noise, noise = (highest -
# lowest repetition) / median of the best baseline).  Saves the raw, summary
# and verdict CSVs and draws a PNG with the slower sizes marked.
#
#   contrib/bench-mpi.sh [-n NP] [-c COLLS] [-s MIN:MAX] [-i ITERS]
#                        [-I LARGE_ITERS] [-r REPS] [-M | -G] [-o OUTDIR]
#                        [-C 'name=mpirun args'] [--ucg-path DIR] [-t SEC]
#                        [--build-dir DIR]
#
# Defaults: np = number of cores, bcast,allreduce, 8:1m bytes, 1000/100
# iterations, 3 repetitions (at least 2 are needed for the noise; with 1 the
# noise is 0), output in ./bench-mpi-out.  -M: each rank's latency is the
# median of its calls (coll_bench -M) instead of OSU's average, which the
# calls preempted on a loaded machine multiply (the tables still say
# "average latency"; the header line of the run says which).  -G (ranks
# on one machine, e.g. the hosts of contrib/multihost.sh): each call's span
# on the clock the ranks share, from the root's call to the last rank's
# return (coll_bench -G), median over calls: what OSU's per-rank time
# holds of the barrier's exit order between calls, it does not.
# Configurations:
#   default  --mca pml ob1                       (Open MPI default: tuned)
#   ucx      --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
#   han      --mca coll_han_priority 100
#            (only where han qualifies: a short probe run with
#            coll_base_verbose looks for its "only local processes" refusal;
#            on a single host it refuses and is left out, since it would be
#            tuned over ob1 again and count twice in "best")
#   ucg      --mca coll ucg,basic,libnbc,tuned,self
#   ucg_ucx  the same over pml ucx (the previous module coll/ucg hands
#            calls to is then tuned over UCX)
#            (both only if ompi_info lists "MCA coll: ucg"; skipped otherwise)
# The baselines also get `--mca coll ^ucg`, so that an installed coll/ucg
# (priority 90) does not take part in them.
# -C (repeatable) replaces this list with your own; configurations whose
# name starts with "ucg" are the candidates, the others the baselines.
# Leading VAR=value words in a configuration are set
# in mpirun's environment.  --ucg-path DIR: coll/ucg from DIR (a directory
# holding mca_coll_ucg.so; not a build tree's .libs), passed to the ucg
# configuration as OMPI_MCA_mca_base_component_path=DIR:<system dir> (the
# environment variable, because ompi_info, used to detect coll/ucg, does not
# take that parameter from --mca).
# Without --ucg-path, the component of the build tree (build/, or
# --build-dir DIR; brought up to date with make) is used when it exists,
# else an installed one.
# Before each repetition the time one cache line takes between two CPUs is
# measured (contrib/cacheline.sh) and written to bench-mpi-cacheline.csv;
# the run warns when the vCPUs were moved during it, and then adds a table
# for the repetitions of each placement (plot-mpi.py --cacheline).
# BENCH_MPI_ARGS (environment) is added to every mpirun; PYTHON picks the
# python3 used for the table and the plot.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
. "$top/contrib/cacheline.sh"
np=$(nproc)
colls=bcast,allreduce
sizes=8:1m
iters=1000
large_iters=100
median=
reps=3
outdir=$PWD/bench-mpi-out
limit=300
ucg_path=
build_dir=$top/build
configs=()
sysdir=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

while [ $# -gt 0 ]; do
    case "$1" in
    -n) np=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -s) sizes=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -I) large_iters=$2; shift 2 ;;
    -M) median=-M; shift ;;
    -G) median=-G; shift ;;
    -r) reps=$2; shift 2 ;;
    -o) outdir=$2; shift 2 ;;
    -t) limit=$2; shift 2 ;;
    -C) configs+=("$2"); shift 2 ;;
    --ucg-path) ucg_path=$2; shift 2 ;;
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1 (see -h)" >&2; exit 2 ;;
    esac
done

tmpdirs=()
cleanup() { rm -rf "${tmpdirs[@]}"; }
trap cleanup EXIT

# The build tree's component, in a directory of its own (Open MPI does not
# load from a libtool .libs directory)
if [ -z "$ucg_path" ] && [ -f "$build_dir/Makefile" ]; then
    make -C "$build_dir" -s -j"$(nproc)" >/dev/null ||
        { echo "bench-mpi: make in $build_dir failed" >&2; exit 1; }
    so=$build_dir/src/ompi/coll/ucg/.libs/mca_coll_ucg.so
    if [ -f "$so" ]; then
        ucg_path=$(mktemp -d)
        tmpdirs+=("$ucg_path")
        ln -s "$so" "$ucg_path/mca_coll_ucg.so"
        echo "bench-mpi: coll/ucg from $so"
    fi
fi

common=(--allow-run-as-root --oversubscribe)
# shellcheck disable=SC2206
common+=(${BENCH_MPI_ARGS:-})
pathenv=()
if [ -n "$ucg_path" ]; then
    pathenv=("OMPI_MCA_mca_base_component_path=$ucg_path:$sysdir")
fi

if [ ${#configs[@]} -eq 0 ]; then
    configs=(
        "default=--mca pml ob1 --mca coll ^ucg"
        "ucx=--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca coll ^ucg"
    )
    han_probe=1
    if env "${pathenv[@]}" ompi_info 2>/dev/null | grep -q 'MCA coll: ucg'; then
        configs+=("ucg=${pathenv[*]} --mca coll ucg,basic,libnbc,tuned,self")
        configs+=("ucg_ucx=${pathenv[*]} --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca coll ucg,basic,libnbc,tuned,self")
    else
        echo "bench-mpi: coll/ucg not found by ompi_info${ucg_path:+ (path $ucg_path)}:" \
             "skipping the ucg configuration"
    fi
fi

make -s -C "$build_dir/test/mpi" coll_bench >/dev/null ||
    { echo "bench-mpi: coll_bench is not built in $build_dir/test/mpi" \
           "(configure found no mpicc? run contrib/bootstrap.sh)" >&2; exit 1; }
# han takes part only where it qualifies (several hosts): on one host it
# refuses the communicators, and its column would be tuned over ob1 again
if [ "${han_probe:-0}" = 1 ]; then
    hlog=$(mktemp)
    tmpdirs+=("$hlog")
    han="han=--mca coll_han_priority 100 --mca coll ^ucg"
    if timeout -k 10 "$limit" mpirun "${common[@]}" -np "$np" \
            --mca coll_han_priority 100 --mca coll ^ucg \
            --mca coll_base_verbose 20 "$build_dir/test/mpi/coll_bench" \
            -c bcast -s 8:8 -i 10 -I 10 >"$hlog" 2>&1; then
        if grep -q 'han.*only local processes' "$hlog"; then
            echo "bench-mpi: han disqualifies itself here (comm has only" \
                 "local processes): left out"
        else
            configs+=("$han")
        fi
    else
        echo "bench-mpi: the han probe failed: han left out"
        tail -5 "$hlog"
    fi
fi
mkdir -p "$outdir"
raw=$outdir/bench-mpi-raw.csv
summary=$outdir/bench-mpi.csv
verdict=$outdir/bench-mpi-verdict.csv
png=$outdir/bench-mpi.png
overlap=$outdir/bench-mpi-overlap.csv
echo "config,rep,coll,bytes,avg_us,min_us,max_us,iterations" >"$raw"
echo "config,rep,coll,bytes,overall_us,compute_us,pure_us,overlap_pct" \
    >"$overlap"

echo "bench-mpi: np=$np colls=$colls sizes=$sizes iterations=$iters/$large_iters" \
     "repetitions=$reps; per-rank latency: $(case "$median" in
        -M) echo "median of the calls (-M)" ;;
        -G) echo "none: the median span of the calls on the common clock (-G)" ;;
        *) echo "average (OSU)" ;; esac)"
for c in "${configs[@]}"; do
    echo "  ${c%%=*}: ${c#*=}"
done

log=$(mktemp)
tmpdirs+=("$log")
failed=0
lines=$outdir/bench-mpi-cacheline.csv
echo "rep,cacheline_ns" >"$lines"
for rep in $(seq 1 "$reps"); do
    cacheline_probe "$build_dir" "$rep" "$lines"
    for c in "${configs[@]}"; do
        name=${c%%=*}
        # shellcheck disable=SC2206
        args=(${c#*=})
        envs=()
        while [ ${#args[@]} -gt 0 ] && [[ ${args[0]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
            envs+=("${args[0]}")
            args=("${args[@]:1}")
        done
        if ! timeout -k 10 "$limit" env "${envs[@]}" mpirun "${common[@]}" -np "$np" "${args[@]}" \
                "$build_dir/test/mpi/coll_bench" -c "$colls" -s "$sizes" \
                -i "$iters" -I "$large_iters" $median >"$log" 2>&1; then
            echo "bench-mpi: $name (repetition $rep) failed:"
            tail -15 "$log"
            failed=1
            continue
        fi
        grep -v '^#' "$log" | grep -E '^[a-z]+ [0-9]+ ' |
            awk -v c="$name" -v r="$rep" 'NF == 6 {
                printf "%s,%s,%s,%s,%s,%s,%s,%s\n", c, r, $1, $2, $3, $4, $5, $6 }' \
            >>"$raw"
        # the nonblocking collectives' overlap (OSU's measure)
        awk -v c="$name" -v r="$rep" '$1 == "overlap" && NF == 7 {
                printf "%s,%s,%s,%s,%s,%s,%s,%s\n", c, r, $2, $3, $4, $5, $6,
                       $7 }' "$log" >>"$overlap"
        echo "  repetition $rep: $name done"
    done
done

# a python3 that has matplotlib (a pyenv/venv python3 first in PATH may not;
# Debian's python3-matplotlib is for /usr/bin/python3); PYTHON overrides
py=${PYTHON:-}
if [ -z "$py" ]; then
    for cand in python3 /usr/bin/python3; do
        if "$cand" -c 'import matplotlib' 2>/dev/null; then
            py=$cand
            break
        fi
    done
fi
"${py:-python3}" "$top/contrib/plot-mpi.py" "$raw" --table \
    --summary "$summary" --verdict "$verdict" --cacheline "$lines" |
    tee "$outdir/bench-mpi.txt"
if [ -z "$py" ]; then
    echo "bench-mpi: no python3 with matplotlib (install python3-matplotlib):" \
         "no plot"
    failed=1
elif "$py" "$top/contrib/plot-mpi.py" "$raw" --png "$png" \
        --title "MPI collectives, np=$np, median of $reps repetitions ($(hostname))"; then
    :
else
    echo "bench-mpi: plotting failed (python3-matplotlib missing?)"
    failed=1
fi
if [ "$(wc -l <"$overlap")" -gt 1 ]; then
    # median over repetitions of each configuration's overlap
    echo
    echo "overlap of the nonblocking collectives (OSU: a computation as long" \
         "as the call between it and MPI_Wait): the median repetition"
    printf '%-12s %-11s %9s %12s %10s\n' config coll bytes overall_us \
        overlap_%
    tail -n +2 "$overlap" | sort -t, -k1,1 -k3,3 -k4,4n -k8,8n |
        awk -F, '{ k = $1 "," $3 "," $4; n[k]++; v[k, n[k]] = $8;
                   o[k, n[k]] = $5; if (!(k in seen)) { seen[k] = 1;
                   order[++m] = k } }
                 END { for (i = 1; i <= m; ++i) { k = order[i];
                       split(k, f, ","); h = int((n[k] + 1) / 2);
                       printf "%-12s %-11s %9s %12.3f %10.1f\n", f[1], f[2],
                              f[3], o[k, h], v[k, h] } }' |
        tee -a "$outdir/bench-mpi.txt"
fi
cacheline_verdict "$lines" | sed 's/^/bench-mpi: /' |
    tee -a "$outdir/bench-mpi.txt"
echo "bench-mpi: raw CSV $raw, summary $summary, verdict $verdict," \
     "overlap $overlap, table $outdir/bench-mpi.txt, plot $png"
exit $failed
