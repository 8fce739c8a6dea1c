# shellcheck shell=bash
#
# Sourced by contrib/bench-mpi.sh and contrib/ucg-tune.sh: how long a cache
# line takes between two CPUs, measured before each repetition.  On a
# virtual machine the hypervisor may move the vCPUs (this project's 2-vCPU
# machine showed 22-28 ns and about 200 ns within minutes), which moves
# every small-message latency: a run whose repetitions saw different lines
# mixes two machines in its medians.
#
#   cacheline_probe BUILD_DIR REP CSV  appends "REP,NS" to CSV and prints
#                                      the line (nothing without
#                                      ucx_o2m_perf in BUILD_DIR)
#   cacheline_verdict CSV              one line: the range, and a WARNING
#                                      when the slowest is over twice the
#                                      fastest
#

cacheline_probe() {
    local perf=$1/src/tools/ucx_o2m_perf rep=$2 csv=$3 ns
    [ -x "$perf" ] || return 0
    ns=$("$perf" -n 2 -t cl -i 50000 -r 5 -T 60 2>/dev/null |
         sed -n 's/.*one-way (RTT\/2): \([0-9.]*\) ns.*/\1/p')
    [ -n "$ns" ] || return 0
    echo "$rep,$ns" >>"$csv"
    echo "  repetition $rep: a cache line moves between two CPUs in $ns ns"
}

cacheline_verdict() {
    [ -f "$1" ] && [ "$(wc -l <"$1")" -gt 1 ] || return 0
    awk -F, 'NR == 1 { next }
        NR == 2 { lo = hi = $2 }
        { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 }
        END { if (hi > 2 * lo)
                  printf "WARNING: a cache line took %.1f to %.1f ns " \
                         "between repetitions: the CPUs were moved during " \
                         "the run, its repetitions are not comparable\n",
                         lo, hi
              else
                  printf "a cache line took %.1f-%.1f ns in every " \
                         "repetition\n", lo, hi }' "$1"
}
