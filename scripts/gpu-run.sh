#!/usr/bin/env bash
# Run on the GPU machine (device tool), carrying .gpu-debs: unpacks the -dev packages into
# a private prefix, builds for sm_80/sm_90, runs the CUDA tests and the benchmarks, and
# writes every log under $OUT.
#   device run: command "bash scripts/gpu-run.sh", carry [".gpu-debs"]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/forgia-out}
mkdir -p "$OUT"
prefix=/tmp/forgia-deps
mkdir -p "$prefix"
for f in .gpu-debs/*.deb; do dpkg -x "$f" "$prefix"; done
multi=$prefix/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$multi/pkgconfig:$prefix/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=
# The .pc files name /usr; point them at the prefix.
for pc in "$multi"/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s|^prefix=/usr|prefix=$prefix/usr|; s|^libdir=/usr|libdir=$prefix/usr|; s|^includedir=/usr|includedir=$prefix/usr|" "$pc"
done
# openblas and the other libraries live behind Debian's alternatives links; add their dirs.
export LD_LIBRARY_PATH=$multi:$multi/openblas-pthread:${LD_LIBRARY_PATH:-}
export CPATH=$prefix/usr/include:$prefix/usr/include/x86_64-linux-gnu:$prefix/usr/include/x86_64-linux-gnu/openblas-pthread
export LIBRARY_PATH=$multi:$multi/openblas-pthread
command -v pkg-config >/dev/null || export PATH=$prefix/usr/bin:$PATH
# Open MPI from the unpacked debs (the NCCL communicator's tests launch under mpirun).
if [ -x "$prefix/usr/bin/mpicc" ]; then
  export OPAL_PREFIX=$prefix/usr PATH=$prefix/usr/bin:$PATH LD_LIBRARY_PATH=$multi:$multi/openmpi/lib:${LD_LIBRARY_PATH:-}
  mpi_args=(-DMPI_C_COMPILER="$prefix/usr/bin/mpicc")
fi
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
{
  cmake -S . -B build-gpu -DFORGIA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="80;90" -DCMAKE_PREFIX_PATH="$prefix/usr" \
    -DGTest_DIR="$multi/cmake/GTest" -DFORGIA_PYTHON="$(command -v python3)" ${mpi_args[@]+"${mpi_args[@]}"} &&
  cmake --build build-gpu -j 16
} > "$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
(cd build-gpu && ctest --output-on-failure -L cuda) > "$OUT/ctest-cuda.log" 2>&1
echo "ctest -L cuda: rc=$?"; tail -n 15 "$OUT/ctest-cuda.log"
(cd build-gpu && ctest --output-on-failure -L cpu -j 16) > "$OUT/ctest-cpu.log" 2>&1
echo "ctest -L cpu: rc=$?"; tail -n 5 "$OUT/ctest-cpu.log"
: > "$OUT/bench.jsonl"
for b in build-gpu/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $b" >> "$OUT/bench.jsonl"
  timeout 120 "$b" >> "$OUT/bench.jsonl" 2>&1
done
# The benchmarks with a device of their own on the GPU (the loop above ran them on the CPU).
for b in bench_es; do
  echo "== $b --device cuda:0" >> "$OUT/bench.jsonl"
  timeout 120 "build-gpu/bench/$b" --device cuda:0 >> "$OUT/bench.jsonl" 2>&1
done
cat "$OUT/bench.jsonl"
