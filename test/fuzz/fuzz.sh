#!/usr/bin/env bash
#
# Build and run a libFuzzer target:
#   o2m_check  the shared-memory checks (src/uct/sm/bcast/o2m_check.c, see
#              test/fuzz/fuzz_o2m_check.c), seeds in test/fuzz/corpus/
#   mc_rel     the packets of the reliable multicast engine
#              (src/uct/mc/rel/, see test/fuzz/fuzz_mc_rel.c), seeds in
#              test/fuzz/corpus_mc_rel/
#   ucg_rules  the tuning rules parser (src/ucg/ucg_rules.c, see
#              test/fuzz/fuzz_ucg_rules.c), seeds in test/fuzz/corpus_rules/
#
#   test/fuzz/fuzz.sh BUILD_DIR [SECONDS [TARGET]]  build, then fuzz SECONDS
#                                                   (60) TARGET (o2m_check)
#   test/fuzz/fuzz.sh BUILD_DIR --seeds             rewrite test/fuzz/corpus/
#   test/fuzz/fuzz.sh BUILD_DIR --seeds mc_rel      rewrite
#                      test/fuzz/corpus_mc_rel/ (what the engine sends in
#                      the target's network mode, see fuzz_mc_rel.c)
#
# BUILD_DIR is a configured build tree: the target is compiled with the UCX
# include flags its configure computed (no second UCX build), with clang's
# -fsanitize=fuzzer,address,undefined (Debian: clang-14, libclang-rt-14-dev;
# contrib/bootstrap.sh installs them).  The checked-in seed corpus is only
# read; new inputs go to a temporary directory.  Exits non-zero when the
# target crashes (the input is kept in BUILD_DIR/test/fuzz/).
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [SECONDS|--seeds]" >&2; exit 2; }
build=$(cd "$1" && pwd)
arg=${2:-60}
target=${3:-o2m_check}
CLANG=${CLANG:-$(command -v clang-14 || command -v clang || true)}
[ -n "$CLANG" ] || { echo "fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }

out=$build/test/fuzz
mkdir -p "$out"

# The UCX include flags and libraries of this build tree; relative to src/uct
make_var() {
    printf 'o2m-print-var:\n\t@echo %s\n' "$1" |
        make -s -C "$build/src/uct" -f Makefile -f - o2m-print-var
}
cppflags=$(make_var '$(DEFS) $(DEFAULT_INCLUDES) $(O2M_UCX_INTERNAL_CPPFLAGS)')
src=$top/src/uct/sm/bcast
common=(-g -O1 -Wall -Wno-unused-function -Wno-unknown-attributes $cppflags -I"$src")

cd "$build/src/uct"
if [ "$arg" = --seeds ] && [ "$target" = o2m_check ]; then
    "$CLANG" "${common[@]}" "$src/o2m_check.c" "$top/test/fuzz/make_seeds.c" \
        -o "$out/make_seeds"
    mkdir -p "$top/test/fuzz/corpus"
    "$out/make_seeds" "$top/test/fuzz/corpus"
    exit 0
fi

case $target in
o2m_check)
    sources=("$src/o2m_check.c" "$top/test/fuzz/fuzz_o2m_check.c")
    libs=()
    corpus=("$top/test/fuzz/corpus")
    bin=$out/o2m_fuzz ;;
mc_rel)
    rel=$top/src/uct/mc/rel
    sources=("$rel/mc_rel_wire.c" "$rel/mc_rel.c" "$rel/mc_rel_tx.c"
             "$rel/mc_rel_rx.c" "$top/test/fuzz/fuzz_mc_rel.c")
    common+=(-I"$rel")
    libs=($(make_var '$(UCX_LDFLAGS)') -lucs)
    corpus=("$top/test/fuzz/corpus_mc_rel")
    bin=$out/mc_rel_fuzz
    if [ "$arg" = --seeds ]; then
        # the seeds are what the engine sends in a run of the target's
        # network mode (fuzz_mc_rel.c, FUZZ_MC_REL_SEEDS)
        "$CLANG" "${common[@]}" -DFUZZ_MC_REL_SEEDS "${sources[@]}" \
            "${libs[@]}" -o "$out/mc_rel_seeds"
        rm -rf "${corpus[0]}"
        mkdir -p "${corpus[0]}"
        "$out/mc_rel_seeds" "${corpus[0]}"
        exit 0
    fi ;;
ucg_rules)
    sources=("$top/src/ucg/ucg_rules.c" "$top/src/ucg/ucg_coll_name.c"
             "$top/test/fuzz/fuzz_ucg_rules.c")
    common+=(-I"$top/src/ucg")
    libs=($(make_var '$(UCX_LDFLAGS)') -lucs)
    corpus=("$top/test/fuzz/corpus_rules")
    bin=$out/ucg_rules_fuzz ;;
*)
    echo "fuzz.sh: unknown target '$target' (o2m_check, mc_rel, ucg_rules)" >&2
    exit 2 ;;
esac

"$CLANG" "${common[@]}" -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all "${sources[@]}" "${libs[@]}" -o "$bin"

work=$(mktemp -d /tmp/ucx-o2m-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
rc=0
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -max_total_time="$arg" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$out/$target-" \
        "$work" "${corpus[@]}" || rc=$?
[ $rc -eq 0 ] || echo "fuzz.sh: the target $target failed (rc=$rc); input in $out/" >&2
exit $rc
