#!/usr/bin/env bash
#
# Build Open MPI 5.0.7 (Debian 13's, from the trixie *source* package) once
# into a cache outside the clone, against Debian 12's installed UCX, so that
# coll/ucg and the MPI suite can run on the newer Open MPI (issue 15 item 4).
#
#   contrib/ompi5-stack.sh            build when needed; prints the prefix
#                                     as its last line
#   contrib/ompi5-stack.sh --prefix   print the prefix of a finished build
#                                     (exit 1 when there is none: no build)
#   contrib/ompi5-stack.sh --ucx118   say whether UCX 1.18.1's source
#                                     package can be fetched here (exit 1
#                                     with the reason when it cannot)
#
# Environment:
#   O2M_OMPI5_CACHE    cache directory (default /var/cache/ucx-o2m/openmpi-5.0.7)
#   O2M_OMPI5_JOBS     make -j (default: nproc)
#   O2M_OMPI5_TIMEOUT  bound on the build, seconds (default 5400)
#
# What it does, each step skipped when done:
#   1. a deb-src entry for trixie (/etc/apt/sources.list.d/
#      ucx-o2m-trixie-src.sources, from debian.sources' bookworm entry; only
#      source packages: no binary of trixie can be installed through it)
#   2. the build dependencies through apt: Debian 12's libucx-dev (1.13.1,
#      so that 'pml ucx' and 'osc ucx' exist), libevent-dev, libhwloc-dev,
#      zlib1g-dev and gfortran (see --enable-mpi-fortran below)
#   3. apt-get source --download-only openmpi=5.0.7-1, unpacked with
#      dpkg-source --skip-patches (its checksums checked against the .dsc):
#      Debian's patches change configure.ac for Debian's packaging (library
#      directory names, pkg-config, other architectures) and would need Open
#      MPI's own autogen; the upstream tarball builds as it is
#   4. configure, make, make install into <cache>/prefix, lean:
#        --with-ucx=/usr --with-ucx-libdir=/usr/lib/<multiarch>
#                                           Debian 12's UCX 1.13.1
#        --with-pmix=internal --with-prrte=internal
#            PRRTE 3.0 (mpirun) needs PMIx >= 4.2.4, Debian 12 has 4.2.2,
#            and trixie's PMIx 5 is again a source package to build: the
#            tarball's own copies are used
#        --with-hwloc=external --with-libevent=external   Debian 12's
#        --with-devel-headers               coll/ucg compiles against them
#        --enable-mpi-fortran=mpifh         only mpif.h: configure needs a
#            Fortran compiler to give MPI_INTEGER, MPI_DOUBLE_PRECISION...
#            their sizes in C (coll_test -F); the use-mpi modules are not
#            needed by anything here
#        --disable-oshmem --disable-io-romio --disable-io-ompio
#            OpenSHMEM and MPI-IO: not used by the project, a large part of
#            the build
#        --without-ofi --without-psm2 --without-cuda --without-rocm
#        --with-slurm=no --without-tm --without-lsf --disable-sphinx
#            no such hardware, scheduler or documentation build here
#   5. the devel headers 'make install' leaves out (below), then a check
#      that ompi/mca/coll/coll.h compiles
#   6. a stamp (<cache>/stamp) with the inputs: the source package's version
#      and checksums, the configure arguments, the UCX and compiler versions,
#      and this recipe's version; a later run with the same inputs does
#      nothing, a changed input rebuilds.
#
# Concurrent runs wait for each other (flock on <cache>.lock); the build runs
# with nice and is bounded (O2M_OMPI5_TIMEOUT); its log is <cache>/build.log.
# The duration of the run is printed at the end: a cold run took 1342 s
# (configure about 5 min, make -j2 and install the rest) on 2 cores shared
# with other builds (load 9-12), a warm one (the stamp check) about 1 s.
# The cache holds the source package (26 MB) and the installation (96 MB);
# the build tree is removed once installed.
#
set -euo pipefail

ompi_version=5.0.7
ompi_debver=5.0.7-1
recipe=1          # bump when the recipe changes without its inputs changing
cache=${O2M_OMPI5_CACHE:-/var/cache/ucx-o2m/openmpi-$ompi_version}
jobs=${O2M_OMPI5_JOBS:-$(nproc)}
limit=${O2M_OMPI5_TIMEOUT:-5400}
prefix=$cache/prefix
stamp=$cache/stamp
trixie_src=/etc/apt/sources.list.d/ucx-o2m-trixie-src.sources

say() { echo "ompi5-stack: $*"; }
die() { echo "ompi5-stack: ERROR: $*" >&2; exit 1; }
# The machine cannot provide the inputs (no root, apt or its mirror fails,
# the source package is not served): exit 3, which contrib/test.sh reports
# as SKIPPED with this line; a failing build is an error (exit 1)
cannot() { echo "ompi5-stack: cannot build here: $*" >&2; exit 3; }

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    SUDO="__none__"
fi
as_root() {
    [ "$SUDO" != __none__ ] || cannot "need root (or sudo) for: $*"
    $SUDO "$@"
}

# The trixie deb-src entry, derived from the bookworm binary entry.
add_trixie_src() {
    if [ -f "$trixie_src" ]; then
        return 1
    fi
    local bin=/etc/apt/sources.list.d/debian.sources uri key
    if [ -f "$bin" ]; then
        uri=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' "$bin")
        key=$(awk '/^Signed-By:/ {print $2; exit}' "$bin")
    fi
    uri=${uri:-http://deb.debian.org/debian}
    key=${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
    say "adding deb-src entry $trixie_src (trixie, $uri)"
    printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: %s\n' \
        "$uri" "$key" | as_root tee "$trixie_src" >/dev/null
    return 0
}

# --ucx118: can UCX 1.18.1's source package be fetched here?
check_ucx118() {
    local tmp out rc
    if add_trixie_src; then
        as_root apt-get update -q >/dev/null 2>&1 || true
    fi
    tmp=$(mktemp -d)
    rc=0
    out=$(cd "$tmp" && timeout 120 apt-get source -q --download-only \
          ucx/trixie 2>&1) || rc=$?
    rm -rf "$tmp"
    if [ $rc -eq 0 ]; then
        say "UCX source package ucx/trixie fetched (the project does not build against it yet)"
        return 0
    fi
    # One line: the files the mirror refused and why, e.g. "404 Not Found
    # (ucx_1.18.1+ds-2.dsc ucx_1.18.1+ds.orig.tar.xz ...)"
    local files why
    files=$(echo "$out" | sed -n 's|^E: Failed to fetch .*/\([^/ ]*\)  *\([0-9][0-9][0-9] [^[]*\).*|\1|p' |
            sed 's/%2b/+/g' | tr '\n' ' ')
    why=$(echo "$out" | sed -n 's|^E: Failed to fetch [^ ]*  *\([0-9][0-9][0-9] [A-Za-z ]*[A-Za-z]\).*|\1|p' |
          head -n 1 | tr -s " ")
    if [ -n "$files" ]; then
        echo "UCX 1.18.1's source package cannot be fetched here: apt-get source ucx/trixie: $why (${files% })" >&2
    else
        echo "UCX 1.18.1's source package cannot be fetched here: apt-get source ucx/trixie: $(echo "$out" | grep '^E:' | head -n 1)" >&2
    fi
    return 1
}

case "${1:-}" in
--prefix)
    if [ -f "$stamp" ] && [ -x "$prefix/bin/mpicc" ]; then
        echo "$prefix"
        exit 0
    fi
    echo "ompi5-stack: no finished build in $cache" >&2
    exit 1 ;;
--ucx118)
    check_ucx118
    exit $? ;;
"") ;;
-h|--help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0 ;;
*)
    die "unknown argument '$1'" ;;
esac

t_start=$(date +%s)
mkdir -p "$(dirname "$cache")" 2>/dev/null || as_root mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock" || die "cannot open $cache.lock"
if ! flock -n 9; then
    say "another build holds $cache.lock; waiting (at most $limit s)"
    flock -w "$limit" 9 || die "$cache.lock still held after $limit s"
fi
mkdir -p "$cache"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
           gcc -print-multiarch)
configure_args=(
    --prefix="$prefix"
    --with-ucx=/usr --with-ucx-libdir="/usr/lib/$multiarch"
    --with-pmix=internal --with-prrte=internal
    --with-hwloc=external --with-libevent=external
    --with-devel-headers
    --enable-mpi-fortran=mpifh
    --disable-oshmem --disable-io-romio --disable-io-ompio
    --without-ofi --without-psm2 --without-cuda --without-rocm
    --with-slurm=no --without-tm --without-lsf --disable-sphinx
    --disable-silent-rules
)

packages=(libucx-dev libevent-dev libhwloc-dev zlib1g-dev gfortran
          dpkg-dev build-essential xz-utils)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
         grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

# The inputs that can be known before fetching anything: when they and the
# source package's checksums match the stamp, the run is warm.
inputs() {
    echo "recipe=$recipe"
    echo "openmpi=$ompi_debver"
    echo "dsc_sha256=$(sha256sum "$cache/src/openmpi_$ompi_debver.dsc" 2>/dev/null | cut -d' ' -f1)"
    echo "configure=${configure_args[*]}"
    echo "ucx=$(dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null)"
    echo "hwloc=$(dpkg-query -W -f='${Version}' libhwloc-dev 2>/dev/null)"
    echo "libevent=$(dpkg-query -W -f='${Version}' libevent-dev 2>/dev/null)"
    echo "cc=$(cc --version 2>/dev/null | head -n 1)"
    echo "fc=$(gfortran --version 2>/dev/null | head -n 1)"
}

# Open MPI 5.0.7's 'make install' with --with-devel-headers leaves out the
# headers of components built into libopen-pal that opal_config.h names
# (MCA_threads_*_HEADER: threads/pthreads, MCA_timer_IMPLEMENTATION_HEADER:
# timer/linux): without them no devel header compiles.  Each one's
# directory is copied from the source package's tarball; then
# ompi/mca/coll/coll.h must compile (what coll/ucg includes).
inc=$prefix/include/openmpi
missing_headers() {
    local h
    for h in $(sed -n 's/^#define MCA_[A-Za-z0-9_]*_HEADER "\(..*\)".*/\1/p' \
               "$inc"/opal_config.h "$inc"/ompi_config.h 2>/dev/null); do
        [ -f "$inc/$h" ] || echo "$h"
    done
}
complete_headers() {
    local missing dirs d tmp
    missing=$(missing_headers)
    if [ -n "$missing" ]; then
        dirs=$(for d in $missing; do dirname "$d"; done | sort -u)
        say "adding the devel headers 'make install' left out:" $dirs
        tmp=$(mktemp -d)
        # shellcheck disable=SC2046
        tar -xJf "$cache/src/openmpi_$ompi_version.orig.tar.xz" -C "$tmp" \
            --wildcards $(for d in $dirs; do
                              echo "openmpi-$ompi_version/$d/*.h"; done) ||
            { rm -rf "$tmp"; die "cannot extract $dirs from the source package"; }
        for d in $dirs; do
            mkdir -p "$inc/$d" && cp "$tmp/openmpi-$ompi_version/$d"/*.h "$inc/$d/" ||
                { rm -rf "$tmp"; die "cannot copy the headers of $d"; }
        done
        rm -rf "$tmp"
        [ -z "$(missing_headers)" ] || die "devel headers still missing: $(missing_headers)"
    fi
    printf '#include <mpi.h>\n#include "ompi/mca/coll/coll.h"\n' |
        cc -fsyntax-only -I"$prefix/include" -I"$inc" -x c - ||
        die "the devel headers of $prefix do not compile (ompi/mca/coll/coll.h)"
}

if [ ${#missing[@]} -eq 0 ] && [ -f "$stamp" ] && [ -x "$prefix/bin/mpicc" ] &&
   [ "$(inputs)" = "$(cat "$stamp")" ]; then
    complete_headers
    say "up to date: $prefix (warm run, $(( $(date +%s) - t_start )) s)"
    echo "$prefix"
    exit 0
fi

# --- cold (or changed inputs): everything below ---
apt_updated=0
if add_trixie_src; then
    as_root apt-get update -q || cannot "apt-get update failed"
    apt_updated=1
fi
if [ ${#missing[@]} -gt 0 ]; then
    say "installing build dependencies: ${missing[*]}"
    if [ $apt_updated -eq 0 ]; then
        as_root apt-get update -q || cannot "apt-get update failed"
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q \
        --no-install-recommends "${missing[@]}" ||
        cannot "apt-get install ${missing[*]} failed"
fi

mkdir -p "$cache/src"
if [ ! -f "$cache/src/openmpi_$ompi_debver.dsc" ] ||
   [ ! -f "$cache/src/openmpi_$ompi_version.orig.tar.xz" ]; then
    say "fetching the source package openmpi=$ompi_debver (trixie)"
    if ! (cd "$cache/src" && timeout 900 apt-get source -q --download-only \
          "openmpi=$ompi_debver"); then
        # A fresh deb-src entry needs an update before apt knows the package.
        if [ $apt_updated -eq 0 ]; then
            as_root apt-get update -q || cannot "apt-get update failed"
            apt_updated=1
        fi
        (cd "$cache/src" && timeout 900 apt-get source -q --download-only \
            "openmpi=$ompi_debver") ||
            cannot "apt-get source openmpi=$ompi_debver failed (is the trixie deb-src entry $trixie_src usable?)"
    fi
fi

build=$cache/build
src=$build/openmpi-$ompi_version
rm -rf "$build" "$prefix" "$stamp"
mkdir -p "$build"
say "unpacking (upstream tarball, Debian's patches not applied)"
dpkg-source -q --skip-patches -x "$cache/src/openmpi_$ompi_debver.dsc" \
    "$src" >/dev/null 2>&1 ||
    die "dpkg-source -x of $cache/src/openmpi_$ompi_debver.dsc failed (checksums?)"

log=$cache/build.log
say "building into $prefix (make -j$jobs, nice, bounded at $limit s; log $log)"
deadline=$(( t_start + limit ))
left() {
    local l=$(( deadline - $(date +%s) ))
    [ $l -gt 0 ] || die "out of time ($limit s); see $log"
    echo $l
}
{
    (cd "$src" && timeout -k 10 "$(left)" nice -n 10 ./configure \
        FC=gfortran "${configure_args[@]}") &&
    timeout -k 10 "$(left)" nice -n 10 make -C "$src" -j"$jobs" &&
    timeout -k 10 "$(left)" nice -n 10 make -C "$src" install
} >"$log" 2>&1 || die "the build failed or ran out of time; see $log (tail: $(tail -n 3 "$log" | tr '\n' ' '))"

"$prefix/bin/ompi_info" --parsable 2>/dev/null | grep -q '^mca:pml:ucx:' ||
    die "the build has no pml ucx (see $log)"
complete_headers
inputs >"$stamp"
rm -rf "$build"
say "built: $prefix (cold run, $(( $(date +%s) - t_start )) s)"
echo "$prefix"
