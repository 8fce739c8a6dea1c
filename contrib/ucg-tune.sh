#!/usr/bin/env bash
#
# Tuning rules for coll/ucg, measured on this machine: for each communicator
# shape asked for (np, processes per host), test/mpi/coll_bench runs the
# same MPI job three ways, interleaved in every repetition:
#   ucg   coll/ucg, every call on UCG with its planner's plans
#   flat  coll/ucg, every call on UCG's point-to-point (flat) plan
#   prev  coll/ucg handing every call to the module selected before it
#         (Open MPI's tuned over the pml of MPIRUN_ARGS: ob1 by default,
#         `-- --mca pml ucx ...` to tune for pml ucx)
# (each through a rules file: one rule for the measured collectives).
# The barrier is decided first, for each shape: coll_bench's MPI_Barrier is
# measured the same ways, and the fastest is the barrier of all three runs of
# the other collectives (the barrier coll_bench runs between iterations
# releases the ranks into each timed call: how it releases them, together
# or one after another, is part of the next call's latency, so each way is
# measured behind the barrier the rules will give).  It writes a
# rules file (docs/ucg.md, "Tuning rules") that
# gives the barrier, and each collective and size, the way with the lowest
# median latency:
# prev when the previous module was faster than both UCG plans, flat when
# UCG's flat plan beat its planner's by more than the margin, else nothing
# (a call no rule matches runs on UCG).  Use it with
#   mpirun --mca coll_ucg_rules_file RULES ...
# and check it with `ucg_info -R --rules RULES`.
#
#   contrib/ucg-tune.sh [-S SHAPES] [-c COLLS] [-s MIN:MAX] [-i ITERS]
#                       [-I LARGE_ITERS] [-r REPS] [-m PCT] [-o RULES] [-M]
#                       [--no-flat] [--ucg-path DIR] [--build-dir DIR]
#                       [-t SEC] [-- MPIRUN_ARGS...]
#
#   -S SHAPES  comma-separated NP[:PPN] (default: 2, i.e. np=2 on one host);
#              PPN < NP: hosts of PPN ranks - real ones when MPIRUN_ARGS
#              name hosts (--host/-H/--hostfile: `--map-by ppr:PPN:node` is
#              added), else virtual hosts of UCG (UCX_UCG_HOSTS=PPN; the
#              previous module still sees one host)
#   -c COLLS   collectives of coll_bench (default bcast,allreduce,reduce);
#              blocking ones that the rules look up by size (bcast,
#              allreduce, reduce, gather, scatter, allgather, alltoall,
#              reduce_scatter_block, scan; the barrier is always
#              measured, first, above): a nonblocking form
#              follows its blocking one's rule, and the vector forms are
#              looked up at 0 bytes whatever their sizes
#   -s MIN:MAX sizes, powers of two (default 8:1m)
#   -i, -I     iterations below / above 8 KiB (default 200 / 50: short
#              runs, the machine may be shared; more for a quiet one)
#   -r REPS    interleaved repetitions; medians over them (default 3)
#   -M         each rank's latency is the median of its calls (coll_bench
#              -M), not their average, which the calls preempted on a
#              shared machine multiply
#   -m PCT     margin: a faster way replaces UCG's planner only when its
#              median is more than PCT % lower (default 0: any lower median,
#              which makes coll/ucg never slower than the measured
#              alternatives; a margin keeps noise out of the table)
#   -o RULES   the rules file written (default ./ucg-rules.txt); the
#              measurements (raw CSV) go to RULES.csv, the cache line
#              between two CPUs before each repetition to
#              RULES.cacheline.csv (contrib/cacheline.sh: the run warns when
#              the vCPUs were moved during it)
#   --no-flat  do not measure UCG's flat plan
#   --ucg-path DIR, --build-dir DIR: as contrib/bench-mpi.sh (coll/ucg and
#              coll_bench of the build tree by default)
#   -t SEC     bound of each mpirun (default 300)
#   after --   mpirun arguments for every run (pml, hosts, ...)
#
# A rule is written per shape (its np and ppn), collective and run of
# consecutive measured sizes with the same decision; a measured size s
# covers the sizes above the previous measured one up to s, the smallest
# from 1 byte, the largest up to inf.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
. "$top/contrib/cacheline.sh"
cmdline="$0 $*"
shapes=2
colls=bcast,allreduce,reduce
sizes=8:1m
iters=200
large_iters=50
reps=3
margin=0
median=
out=$PWD/ucg-rules.txt
flat=1
ucg_path=
build_dir=$top/build
limit=300
mpi_args=()
sysdir=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
die() { echo "ucg-tune: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
    -S) shapes=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -s) sizes=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -I) large_iters=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -m) margin=$2; shift 2 ;;
    -M) median=-M; shift ;;
    -o) out=$(readlink -m "$2"); shift 2 ;;
    -t) limit=$2; shift 2 ;;
    --no-flat) flat=0; shift ;;
    --ucg-path) ucg_path=$2; shift 2 ;;
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    --) shift; mpi_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1 (see -h)" >&2; exit 2 ;;
    esac
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || die "-r: a positive number, not '$reps'"
[[ $margin =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "-m: a percentage, not '$margin'"
IFS=, read -r -a coll_list <<<"$colls"
colls=
for c in "${coll_list[@]}"; do
    case "$c" in
    bcast|allreduce|reduce|gather|scatter|allgather|alltoall|\
    reduce_scatter_block|scan) colls+=${colls:+,}$c ;;
    barrier) ;; # measured first in any case
    *) die "-c: '$c' has no rule by size (see -h)" ;;
    esac
done
[ -n "$colls" ] || die "-c: no collective besides the barrier"

tmpdirs=()
cleanup() { rm -rf "${tmpdirs[@]}"; }
trap cleanup EXIT
work=$(mktemp -d /tmp/ucx-o2m-tune.XXXXXX)
tmpdirs+=("$work")

# coll/ucg of the build tree, in a directory of its own (Open MPI does not
# load from a libtool .libs directory)
if [ -z "$ucg_path" ] && [ -f "$build_dir/Makefile" ]; then
    make -C "$build_dir" -s -j"$(nproc)" >/dev/null ||
        die "make in $build_dir failed"
    so=$build_dir/src/ompi/coll/ucg/.libs/mca_coll_ucg.so
    [ -f "$so" ] || die "$so is not built"
    ucg_path=$work/comp
    mkdir -p "$ucg_path"
    ln -s "$so" "$ucg_path/mca_coll_ucg.so"
fi
pathenv=()
if [ -n "$ucg_path" ]; then
    pathenv=("OMPI_MCA_mca_base_component_path=$ucg_path:$sysdir")
fi
env "${pathenv[@]}" ompi_info 2>/dev/null | grep -q 'MCA coll: ucg' ||
    die "coll/ucg not found by ompi_info${ucg_path:+ (path $ucg_path)}"
make -s -C "$build_dir/test/mpi" coll_bench >/dev/null ||
    die "coll_bench is not built in $build_dir/test/mpi"

ways=(ucg prev)
[ "$flat" = 1 ] && ways=(ucg flat prev)

# write_rules FILE BARRIER_WAY WAY: a rule each, so that the runs of one
# stage differ only in coll/ucg's decision for what they measure
write_rules() {
    printf 'ucg-rules 1\nbarrier * * * %s\n* * * * %s\n' "$2" "$3" >"$1"
    if [ -x "$build_dir/src/tools/ucg_info" ]; then
        "$build_dir/src/tools/ucg_info" -R --rules "$1" >/dev/null ||
            die "ucg_info rejects $1"
    fi
}

has_hosts=0
for a in "${mpi_args[@]}"; do
    case "$a" in --host|-H|--hostfile|-hostfile|--machinefile) has_hosts=1 ;; esac
done

raw=$out.csv
echo "repetition,cacheline_ns" >"$out.cacheline.csv"
echo "shape,np,ppn,way,rep,coll,bytes,avg_us" >"$raw"
log=$work/log
echo "ucg-tune: shapes $shapes, $colls, sizes $sizes, iterations" \
     "$iters/$large_iters, $reps repetitions, ways ${ways[*]}," \
     "mpirun args: ${mpi_args[*]:-(none)}"
IFS=, read -r -a shape_list <<<"$shapes"
for shape in "${shape_list[@]}"; do
    np=${shape%%:*}
    ppn=$np
    [[ $shape == *:* ]] && ppn=${shape#*:}
    [[ $np =~ ^[1-9][0-9]*$ && $ppn =~ ^[1-9][0-9]*$ && $ppn -le $np ]] ||
        die "bad shape '$shape' (NP[:PPN], 1 <= PPN <= NP)"
    [ "$np" -ge 2 ] || die "shape '$shape': coll/ucg needs np >= 2"
    layout=()
    if [ "$ppn" -lt "$np" ]; then
        if [ "$has_hosts" = 1 ]; then
            layout=(--map-by "ppr:$ppn:node")
        else
            layout=(-x "UCX_UCG_HOSTS=$ppn")
        fi
    fi
    # The barrier first, then the collectives behind the barrier decided
    bway=
    for stage in barrier colls; do
        for rep in $(seq 1 "$reps"); do
            cacheline_probe "$build_dir" "$rep of shape $shape ($stage)" \
                "$out.cacheline.csv"
            for w in "${ways[@]}"; do
                if [ $stage = barrier ]; then
                    write_rules "$work/$w.rules" "$w" ucg
                    what=barrier
                else
                    write_rules "$work/$w.rules" "$bway" "$w"
                    what=$colls
                fi
                if ! timeout -k 10 "$limit" env "${pathenv[@]}" mpirun \
                        --allow-run-as-root --oversubscribe -np "$np" \
                        "${layout[@]}" "${mpi_args[@]}" \
                        --mca coll ucg,basic,libnbc,tuned,self \
                        --mca coll_ucg_rules_file "$work/$w.rules" \
                        "$build_dir/test/mpi/coll_bench" -c "$what" \
                        -s "$sizes" -i "$iters" -I "$large_iters" $median \
                        >"$log" 2>&1; then
                    tail -15 "$log"
                    die "shape $shape, $stage, $w (repetition $rep) failed"
                fi
                grep -E '^[a-z]+ [0-9]+ ' "$log" |
                    awk -v s="$shape" -v n="$np" -v p="$ppn" -v w="$w" \
                        -v r="$rep" 'NF == 6 {
                        printf "%s,%s,%s,%s,%s,%s,%s,%s\n", s, n, p, w, r,
                               $1, $2, $3 }' >>"$raw"
                echo "  shape $shape repetition $rep: $stage $w done"
            done
        done
        if [ $stage = barrier ]; then
            bway=$(python3 - "$raw" "$shape" "$margin" <<'EOF'
import csv, statistics, sys
raw, shape, margin = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 100
med = {}
for w in ('ucg', 'flat', 'prev'):
    v = [float(r['avg_us']) for r in csv.DictReader(open(raw))
         if r['shape'] == shape and r['coll'] == 'barrier' and r['way'] == w]
    if v:
        med[w] = statistics.median(v)
way = 'ucg'
for w in ('flat', 'prev'):
    if w in med and med[w] < med[way] * (1 - margin):
        way = w
print(way)
EOF
)
            [ -n "$bway" ] || die "shape $shape: no barrier measured"
            echo "  shape $shape: the barrier goes $bway; the collectives" \
                 "are measured behind it"
        fi
    done
done

cacheline_verdict "$out.cacheline.csv" | sed 's/^/ucg-tune: /'

# Decisions and the rules file
python3 - "$raw" "$out" "$margin" "$cmdline" <<'EOF'
import csv, statistics, sys, time, socket, os
from collections import defaultdict

raw, out, margin = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 100
data = defaultdict(list)
shapes = {}
for row in csv.DictReader(open(raw)):
    key = (row['shape'], row['coll'], int(row['bytes']))
    data[key + (row['way'],)].append(float(row['avg_us']))
    shapes[row['shape']] = (int(row['np']), int(row['ppn']))

def fmt(b):
    for unit, shift in (('m', 20), ('k', 10)):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return '%d%s' % (b >> shift, unit)
    return str(b)

lines, rules = [], []
for shape, (np_, ppn) in shapes.items():
    colls = []
    for (s, c, b, w) in data:
        if s == shape and c not in colls:
            colls.append(c)
    for coll in colls:
        sizes = sorted({b for (s, c, b, w) in data if s == shape and c == coll})
        decided = []
        lines.append('# np=%d ppn=%d %s: median us  ucg / flat / prev -> '
                     'decision' % (np_, ppn, coll))
        for b in sizes:
            med = {w: statistics.median(data[(shape, coll, b, w)])
                   for w in ('ucg', 'flat', 'prev')
                   if (shape, coll, b, w) in data}
            if 'ucg' not in med or 'prev' not in med:
                continue
            way, best = 'ucg', med['ucg']
            if 'flat' in med and med['flat'] < best * (1 - margin):
                way, best = 'flat', med['flat']
            if med['prev'] < best * (1 - margin):
                way, best = 'prev', med['prev']
            decided.append((b, way))
            lines.append('#   %8s  %8.2f / %8s / %8.2f -> %s' % (
                fmt(b), med['ucg'],
                '%.2f' % med['flat'] if 'flat' in med else '-',
                med['prev'], way))
        # runs of consecutive sizes with the same decision
        i = 0
        while i < len(decided):
            j = i
            while j + 1 < len(decided) and decided[j + 1][1] == decided[i][1]:
                j += 1
            lo = 1 if i == 0 else decided[i - 1][0] + 1
            hi = 'inf' if j == len(decided) - 1 else fmt(decided[j][0])
            rng = '0' if coll == 'barrier' else '%s-%s' % (fmt(lo), hi)
            if decided[i][1] != 'ucg':
                rules.append('%-10s %-4d %-4d %-20s %s' % (
                    coll, np_, ppn, rng, decided[i][1]))
            i = j + 1

with open(out, 'w') as f:
    f.write('# coll/ucg tuning rules written by contrib/ucg-tune.sh %s\n'
            '# on %s (%d CPUs), %s; margin %g %%\n'
            '# use: mpirun --mca coll_ucg_rules_file %s ...\n'
            '# a call no rule matches runs on UCG (its planner\'s plan)\n#\n'
            % (sys.argv[4], socket.gethostname(), os.cpu_count(),
               time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
               margin * 100, out))
    for l in lines:
        f.write(l + '\n')
    f.write('\nucg-rules 1\n# coll     np   ppn  bytes                action\n')
    for r in rules:
        f.write(r + '\n')
print('\n'.join(lines))
print('ucg-tune: %d rules written to %s (measurements: %s)' %
      (len(rules), out, raw))
EOF

# The file must parse as coll/ucg will read it
if [ -x "$build_dir/src/tools/ucg_info" ]; then
    "$build_dir/src/tools/ucg_info" -R --rules "$out" ||
        die "ucg_info does not accept $out"
fi
