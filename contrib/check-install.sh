#!/usr/bin/env bash
#
# Checks what 'make install' produces, without touching the system:
#   contrib/check-install.sh [BUILD_DIR]   (default: build/)
# installs into a temporary DESTDIR and checks that the header, the library
# and ucx-o2m.pc land, that a program builds against them with pkg-config,
# and that the installed plugin, preloaded, makes ucx_info -d list
# sm_bcast and sm_incast.  Then the same for UCG: ucg.h, libucg_o2m and
# ucg-o2m.pc land, a program built with 'pkg-config ucg-o2m' reads the UCG
# configuration and sees the transports without LD_PRELOAD (libucg_o2m
# needs the plugin), and the installed ucg_info -c and a short ucg_perf
# run work.
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build=$(readlink -f "${1:-$top/build}")
die() { echo "check-install: FAIL: $*" >&2; exit 1; }
say() { echo "check-install: $*"; }

[ -f "$build/Makefile" ] || die "$build is not a configured build dir"
dest=$(mktemp -d /tmp/ucx-o2m-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT

say "make install DESTDIR=$dest"
make -C "$build" install DESTDIR="$dest" >/dev/null || die "make install failed"

hdr=$(find "$dest" -path '*/include/ucx-o2m/uct_o2m.h' | head -n1)
lib=$(find "$dest" -name libuct_o2m.so | head -n1)
pc=$(find "$dest" -path '*/pkgconfig/ucx-o2m.pc' | head -n1)
[ -n "$hdr" ] || die "include/ucx-o2m/uct_o2m.h not installed"
[ -n "$lib" ] || die "libuct_o2m.so not installed"
[ -n "$pc" ]  || die "pkgconfig/ucx-o2m.pc not installed"
say "installed: ${hdr#$dest} ${lib#$dest} ${pc#$dest}"
[ "$(dirname "$lib")" = "$(dirname "$(dirname "$pc")")" ] ||
    die "ucx-o2m.pc is not in \$(libdir)/pkgconfig"

flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest \
        pkg-config --cflags --libs ucx-o2m) || die "pkg-config ucx-o2m failed"
say "pkg-config --cflags --libs ucx-o2m: $flags"

cat > "$dest/prog.c" <<'PROG'
#include <uct_o2m.h>
#include <stdio.h>
int main(void)
{
    if (uct_o2m_dtype_size(UCT_O2M_DT_DOUBLE) != sizeof(double)) {
        return 1;
    }
    printf("%s\n", uct_o2m_mode_name(UCT_O2M_MODE_BATCHED));
    return 0;
}
PROG
# shellcheck disable=SC2086
cc -Wall -Werror -o "$dest/prog" "$dest/prog.c" $flags ||
    die "a program using uct_o2m.h does not build with the installed files"
LD_LIBRARY_PATH=$(dirname "$lib") "$dest/prog" >/dev/null ||
    die "a program linked with the installed libuct_o2m does not run"

ucx_info=$(sed -n 's/^UCX_INFO = //p' "$build/Makefile")
out=$(LD_PRELOAD=$lib "${ucx_info:-ucx_info}" -d) || die "ucx_info -d with the installed plugin preloaded failed"
for tl in sm_bcast sm_incast; do
    grep -qE "Transport: $tl\$" <<<"$out" ||
        die "ucx_info -d with the installed plugin preloaded does not list $tl"
done

# --- UCG ---
ucg_hdr=$(find "$dest" -path '*/include/ucx-o2m/ucg.h' | head -n1)
ucg_lib=$(find "$dest" -name libucg_o2m.so | head -n1)
ucg_pc=$(find "$dest" -path '*/pkgconfig/ucg-o2m.pc' | head -n1)
ucg_info=$(find "$dest" -path '*/bin/ucg_info' | head -n1)
[ -n "$ucg_hdr" ]  || die "include/ucx-o2m/ucg.h not installed"
[ -n "$ucg_lib" ]  || die "libucg_o2m.so not installed"
[ -n "$ucg_pc" ]   || die "pkgconfig/ucg-o2m.pc not installed"
[ -n "$ucg_info" ] || die "bin/ucg_info not installed"
say "installed: ${ucg_hdr#$dest} ${ucg_lib#$dest} ${ucg_pc#$dest} ${ucg_info#$dest}"
[ "$(dirname "$ucg_lib")" = "$(dirname "$lib")" ] ||
    die "libucg_o2m.so and libuct_o2m.so are not in the same \$(libdir)"
[ "$ucg_pc" = "$(dirname "$pc")/ucg-o2m.pc" ] ||
    die "ucg-o2m.pc is not in \$(libdir)/pkgconfig"
readelf -d "$ucg_lib" | grep -q 'NEEDED.*\[libuct_o2m\.so' ||
    die "libucg_o2m.so does not have libuct_o2m.so as DT_NEEDED"
# Exactly the UCG_API functions of the installed UCG headers (ucg.h and
# ucg_rules.h, the tuning rules) are exported (hidden visibility)
ucg_hdrs=("$(dirname "$ucg_hdr")"/ucg*.h)
[ -f "$(dirname "$ucg_hdr")/ucg_rules.h" ] ||
    die "include/ucx-o2m/ucg_rules.h not installed"
api=$(sed -n 's/^UCG_API[^(]*[ *]\(ucg_[a-z0-9_]*\)(.*/\1/p' "${ucg_hdrs[@]}" |
      sort)
[ -n "$api" ] || die "no UCG_API declaration found in the installed ucg.h"
exported=$(nm -D --defined-only "$ucg_lib" | awk '$2 ~ /^[TDBRV]$/ {print $3}' |
           grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort)
extra=$(comm -13 <(echo "$api") <(echo "$exported"))
missing=$(comm -23 <(echo "$api") <(echo "$exported"))
[ -z "$extra" ] ||
    die "libucg_o2m.so exports symbols that are not in its headers: $(echo $extra)"
[ -z "$missing" ] ||
    die "libucg_o2m.so does not export these functions of its headers: $(echo $missing)"

ucg_flags=$(PKG_CONFIG_PATH=$(dirname "$ucg_pc") PKG_CONFIG_SYSROOT_DIR=$dest \
            pkg-config --cflags --libs ucg-o2m) || die "pkg-config ucg-o2m failed"
say "pkg-config --cflags --libs ucg-o2m: $ucg_flags"

cat > "$dest/ucg_prog.c" <<'PROG'
#include <ucg.h>
#include <uct/api/uct.h>
#include <string.h>
#include <stdio.h>
int main(void)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned i, num_components;
    ucg_config_t *config;
    int found = 0;

    if (ucg_config_read(NULL, &config) != UCS_OK) {
        return 1;
    }
    ucg_config_release(config);
    if (ucg_dtype_size(UCG_DT_DOUBLE) != sizeof(double)) {
        return 2;
    }

    /* libucg_o2m brings the plugin: its component is registered */
    if (uct_query_components(&components, &num_components) != UCS_OK) {
        return 3;
    }
    for (i = 0; i < num_components; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "o2m")) {
            found = 1;
        }
    }
    uct_release_component_list(components);
    if (!found) {
        fprintf(stderr, "the o2m component is not registered\n");
        return 4;
    }
    printf("%s\n", ucg_coll_name(UCG_COLL_ALLREDUCE));
    return 0;
}
PROG
# shellcheck disable=SC2086
cc -Wall -Werror -o "$dest/ucg_prog" "$dest/ucg_prog.c" $ucg_flags ||
    die "a program using ucg.h does not build with the installed files"
rc=0
env -u LD_PRELOAD LD_LIBRARY_PATH=$(dirname "$ucg_lib") "$dest/ucg_prog" >/dev/null || rc=$?
[ $rc -eq 0 ] ||
    die "a program linked with the installed libucg_o2m does not run (rc=$rc)"

rc=0
out=$(env -u LD_PRELOAD LD_LIBRARY_PATH=$(dirname "$ucg_lib") "$ucg_info" -c) || rc=$?
[ $rc -eq 0 ] || die "the installed ucg_info -c failed (rc=$rc)"
grep -q 'UCG_HOSTS' <<<"$out" ||
    die "the installed ucg_info -c does not print UCX_UCG_HOSTS"

# A public-API program on the installed library, collectives included
ucg_perf=$(find "$dest" -path '*/bin/ucg_perf' | head -n1)
[ -n "$ucg_perf" ] || die "bin/ucg_perf not installed"
rc=0
out=$(env -u LD_PRELOAD LD_LIBRARY_PATH=$(dirname "$ucg_lib") timeout 120 \
      "$ucg_perf" -n 2 -c allreduce,bcast -s 8,16K -i 20 -r 1 -q 2>&1) || rc=$?
[ $rc -eq 0 ] || { echo "$out" >&2; die "the installed ucg_perf failed (rc=$rc)"; }
say "PASS"
