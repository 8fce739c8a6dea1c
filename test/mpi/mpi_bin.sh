#!/usr/bin/env bash
#
# Sourced by test/mpi/run.sh and test/mpi/run-multihost.sh: the MPI programs
# are built by automake in the build tree, not next to their sources.
#
#   mpi_bin_make BUILD_DIR PROG...
#
# sets mpi_build to the build tree, mpi_bin to its test/mpi directory, and
# brings PROG... up to date there (make).  BUILD_DIR empty: build/ at the top of the source
# tree (contrib/bootstrap.sh's), else the source tree itself when it was
# configured in place.  Returns non-zero, with one line on stderr, when
# there is no such build tree or the programs cannot be built (configure
# found no mpicc).
#

mpi_bin_make() {
    local build=$1 top
    shift
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ -z "$build" ]; then
        build=$top/build
        [ -f "$build/test/mpi/Makefile" ] || build=$top
    fi
    mpi_build=$(readlink -m "$build")
    mpi_bin=$mpi_build/test/mpi
    if [ ! -f "$mpi_bin/Makefile" ]; then
        echo "no configured build tree in $build (run contrib/bootstrap.sh" \
             "or give --build-dir)" >&2
        return 1
    fi
    if grep -q '^MPICC = no$' "$mpi_bin/Makefile"; then
        echo "$build was configured without mpicc: the MPI programs are" \
             "not built (package openmpi-bin, or MPICC=... for configure)" >&2
        return 1
    fi
    make -s -C "$mpi_bin" "$@" >/dev/null ||
        { echo "building $* in $mpi_bin failed" >&2; return 1; }
}

# mpi_stack: the Open MPI the build tree's programs are built with
# (configure's MPICC: /usr/bin's, or the one of --with-ompi=DIR, e.g.
# contrib/ompi5-stack.sh's Open MPI 5): sets mpi_run (its mpirun),
# mpi_version (e.g. 4.1.4) and mpi_comp_dir (its own component directory,
# for mca_base_component_path).  Call after mpi_bin_make.
mpi_stack() {
    local cc bindir=""
    cc=$(sed -n 's/^MPICC = //p' "$mpi_bin/Makefile")
    case "$cc" in
    */*) bindir=$(dirname "$cc")/ ;;
    esac
    mpi_run=${bindir}mpirun
    mpi_version=$("${bindir}ompi_info" --parsable 2>/dev/null |
                  sed -n 's/^ompi:version:full://p' | head -n 1)
    mpi_comp_dir=$("${bindir}ompi_info" --path pkglibdir --parsable \
                   2>/dev/null | sed -n 's/^path:pkglibdir://p')
    if [ -z "$mpi_version" ] || [ -z "$mpi_comp_dir" ]; then
        echo "cannot ask ${bindir}ompi_info for the version and component" \
             "directory of the Open MPI of $mpi_build" >&2
        return 1
    fi
}
