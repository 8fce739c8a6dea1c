#!/usr/bin/env bash
#
# Checks what 'make install' produces, without touching the system:
#   contrib/check-install.sh [BUILD_DIR]   (default: build/)
# installs into a temporary DESTDIR and checks that the header, the library
# and ucx-o2m.pc land, that a program builds against them with pkg-config,
# and that the installed plugin, preloaded, makes ucx_info -d list
# sm_bcast and sm_incast.
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
say "PASS"
