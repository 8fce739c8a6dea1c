#!/usr/bin/env bash
#
# Bring a fresh Debian 12 machine to a built ucx-o2m tree.  Idempotent: every
# step checks whether it is already done.  Run from anywhere as root (or with
# sudo available).
#
#   contrib/bootstrap.sh [--build-dir DIR] [--no-build] [-- extra configure args]
#
# Steps:
#   1. apt packages (UCX 1.13.1, its -dev, ucx-utils, gtest, autotools,
#      QEMU and the tools of the Soft-RoCE VM bed, ...)
#   2. a deb-src entry for the configured Debian suites, when there is none
#      for this machine's suite (bookworm; a trixie one does not count)
#   3. the UCX source package of exactly the installed libucx0 version
#      (internal headers for the transports), unpacked under .deps/
#   4. autogen, configure, make in the build dir (default: build/)
#
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build_dir="$top/build"
do_build=1
extra_configure=()

while [ $# -gt 0 ]; do
    case "$1" in
    --build-dir) build_dir=$(readlink -m "$2"); shift 2 ;;
    --no-build)  do_build=0; shift ;;
    --)          shift; extra_configure=("$@"); break ;;
    *)           echo "bootstrap: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

say()  { echo "bootstrap: $*"; }
die()  { echo "bootstrap: ERROR: $*" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    die "must run as root or have sudo to install packages"
fi

packages=(
    build-essential autoconf automake libtool pkg-config dpkg-dev
    libucx0 libucx-dev ucx-utils
    libgtest-dev googletest
    libibverbs-dev librdmacm-dev ibverbs-providers
    libopenmpi-dev openmpi-bin
    python3 python3-matplotlib
    clang-14 libclang-rt-14-dev
    iproute2 nftables util-linux
    qemu-system-x86 busybox-static kmod cpio ibverbs-utils rdmacm-utils
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
apt_updated=0
if [ ${#missing[@]} -gt 0 ]; then
    say "installing packages: ${missing[*]}"
    $SUDO apt-get update -q || die "apt-get update failed"
    apt_updated=1
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
        "${missing[@]}" || die "apt-get install failed"
else
    say "all packages already installed"
fi

# deb-src entry: same URIs/Suites/Components/Signed-By as the binary sources.
# Only an entry for this machine's own suite counts: another one (the
# trixie entry contrib/ompi5-stack.sh adds for Open MPI 5's source) does
# not serve 'apt-get source ucx=<installed version>'.
src_list=/etc/apt/sources.list.d/ucx-o2m-debian-src.sources
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# have_src_for SUITE: an enabled deb-src entry (one-line or deb822) names it
have_src_for() {
    grep -sqE "^[[:space:]]*deb-src[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+[[:space:]]+$1[[:space:]]" \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$1" 'BEGIN { RS = ""; found = 0 }
            $0 ~ /(^|\n)Types:[^\n]*deb-src/ &&
            $0 ~ ("(^|\n)Suites:([^\n]*[ \t])?" suite "([ \t]|\n|$)") &&
            $0 !~ /(^|\n)Enabled:[ \t]*no/ { found = 1 }
            END { exit !found }' "$f" && return 0
    done
    return 1
}
have_src=0
if have_src_for "$codename"; then
    have_src=1
fi
if [ $have_src -eq 0 ]; then
    bin_list=/etc/apt/sources.list.d/debian.sources
    [ -f "$bin_list" ] || die "no deb-src entry and no $bin_list to derive one from; add a deb-src line for $codename by hand"
    say "adding deb-src entry $src_list (derived from $bin_list)"
    sed -e 's/^Types:.*/Types: deb-src/' "$bin_list" | $SUDO tee "$src_list" >/dev/null
    apt_updated=0
fi

ucx_version=$(dpkg-query -W -f='${Version}' libucx0) || die "libucx0 is not installed"
ucx_upstream=${ucx_version%%-*}
ucx_upstream=${ucx_upstream#*:}
deps="$top/.deps"
ucx_src="$deps/ucx-$ucx_upstream"
if [ ! -f "$ucx_src/src/uct/base/uct_iface.h" ]; then
    if [ $apt_updated -eq 0 ]; then
        $SUDO apt-get update -q || die "apt-get update failed"
    fi
    say "fetching UCX source package ucx=$ucx_version into $deps"
    mkdir -p "$deps"
    rm -rf "$ucx_src"
    (cd "$deps" && apt-get source -q --download-only "ucx=$ucx_version") ||
        die "apt-get source ucx=$ucx_version failed"
    (cd "$deps" && dpkg-source -x ucx_*.dsc "$ucx_src" >/dev/null) ||
        die "unpacking the UCX source package failed"
    [ -f "$ucx_src/src/uct/base/uct_iface.h" ] ||
        die "UCX source in $ucx_src lacks src/uct/base/uct_iface.h"
else
    say "UCX source for $ucx_version already in $ucx_src"
fi

if [ $do_build -eq 0 ]; then
    say "done (--no-build): UCX source is $ucx_src"
    exit 0
fi

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
    say "running autogen.sh"
    (cd "$top" && ./autogen.sh) || die "autogen.sh failed"
fi

mkdir -p "$build_dir"
if [ ! -f "$build_dir/Makefile" ] || [ "$top/configure" -nt "$build_dir/Makefile" ] ||
   [ ${#extra_configure[@]} -gt 0 ]; then
    say "configuring in $build_dir"
    (cd "$build_dir" && "$top/configure" --with-ucx-src="$ucx_src" \
        "${extra_configure[@]}") || die "configure failed (see $build_dir/config.log)"
fi

say "building in $build_dir"
make -C "$build_dir" -j"$(nproc)" >/dev/null || die "make failed"
say "done: plugin is $build_dir/src/uct/.libs/libuct_o2m.so, UCG is $build_dir/src/ucg/.libs/libucg_o2m.so"
