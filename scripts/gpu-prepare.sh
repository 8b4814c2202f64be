#!/usr/bin/env bash
# Run HERE (a machine with Debian's registry): downloads the -dev packages the build needs
# into .gpu-debs/ (git-ignored), to be carried to the GPU machine, which reaches no registry.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-debs
cd .gpu-debs
apt-get update -qq
pkgs=(libhwloc-dev libhwloc15 libcjson-dev libcjson1 libopenblas-dev libopenblas0 libopenblas0-pthread
      # PCRE2 for the tokenizers' pre-tokenizers (libpcre2-dev depends on all four libraries).
      libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
      # utf8proc for the NFC normalizer of tokenizers.
      libutf8proc-dev libutf8proc2
      libopenblas-pthread-dev libgtest-dev libgfortran5 libudev-dev libudev1 libltdl7 libnuma1 libxml2 pkg-config
      libpkgconf3 pkgconf pkgconf-bin
      # Open MPI for the MPI and NCCL communicators (NCCL's id travels over MPI), with the
      # libraries it loads; gpu-run.sh must point OPAL_PREFIX at the unpacked prefix.
      libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libpmix-dev libevent-core-2.1-7
      libevent-pthreads-2.1-7 libevent-dev libfabric1 libucx0 libpsm2-2 libpsm-infinipath1 libibverbs1 libibverbs-dev
      librdmacm1 libnl-3-200 libnl-route-3-200 libhwloc-plugins)
apt-get download "${pkgs[@]}" 2>&1 | tail -n 2
ls -1 | wc -l
