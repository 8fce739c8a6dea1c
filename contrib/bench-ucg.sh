#!/usr/bin/env bash
#
# Run the UCG collective benchmark (ucg_perf) from the build tree and print
# its tables: every collective with the one-to-many transports (o2m) against
# point-to-point only (p2p, UCX_UCG_O2M=n), measured in the same run.
# Run contrib/bootstrap.sh first.
#
#   contrib/bench-ucg.sh [--build-dir DIR] [--no-make] [ucg_perf options...]
#
# Defaults of the tool: np 2,3,4,8; every collective; 8 B .. 1 MiB.  Other
# options go to the tool (contrib/bench-ucg.sh -h lists them), e.g.
#   contrib/bench-ucg.sh -n 2,4 -c bcast,allreduce -s 8,64,1K,8K,64K
#   contrib/bench-ucg.sh -q -o build/bench-ucg.csv
# The output is also saved to DIR/bench-ucg.txt.
#
set -euo pipefail

. "$(dirname "$(readlink -f "$0")")/bench-tool.sh"
bench_tool_main bench-ucg ucg_perf bench-ucg.txt "$@"
