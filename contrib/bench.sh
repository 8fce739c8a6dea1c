#!/usr/bin/env bash
#
# Transport benchmark: run ucx_o2m_perf (sm_bcast / sm_incast against
# posix) with sensible defaults and print its tables.  Run
# contrib/bootstrap.sh first.  The MPI-level comparison is
# contrib/bench-mpi.sh, the UCG-level one contrib/bench-ucg.sh.
#
#   contrib/bench.sh [--build-dir DIR] [--no-make] [ucx_o2m_perf options...]
#
# Defaults: group sizes 2,4,8; payloads 8 B .. 1 MiB; every test (cache-line
# reference, fan-out and fan-in latency, bandwidth); about 3-4 minutes on a
# 2-core machine.  Other options go to the tool (contrib/bench.sh -h lists
# them), e.g.  contrib/bench.sh -n 2 -s 8,64 -t cl,fanout
# The output is also saved to DIR/bench.txt.
#
set -euo pipefail

. "$(dirname "$(readlink -f "$0")")/bench-tool.sh"
bench_tool_main bench ucx_o2m_perf bench.txt "$@"
