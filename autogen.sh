#!/bin/sh
# Regenerate the autotools build system (configure, Makefile.in, ...).
set -e
cd "$(dirname "$0")"
mkdir -p config m4
autoreconf -fi "$@"
