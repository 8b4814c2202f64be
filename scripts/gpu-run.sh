#!/usr/bin/env bash
# The GPU run, in stages that each fit one device command (600 s) with room to spare.
#
#   scripts/gpu-run.sh STAGE...             on the GPU machine, carrying .gpu-debs
#   scripts/gpu-run.sh --rehearse [STAGE...] here: the same path against the carried packages
#                                            alone, with no GPU (the default stages: all but cpu)
#
# Stages, in the order to run them (one device command each; a stage re-run redoes only itself):
#   build        unpack .gpu-debs into a prefix, configure (CUDA, MPI and NCCL required) and
#                build the whole tree for sm_80 and sm_90, 16 jobs
#   cuda         the CUDA tests (ctest -L cuda): the exact GEMM and the kernel-family memcmp
#                tests first, then the rest; a skipped test for want of a device FAILS here
#   bench-short  the benchmarks with a GPU part (gemm, ops, reduce, convert, rng, optim, es on cuda:0)
#   bench-long   the host-side benchmarks (load, open, quant, ptqtp, tokenize, es on the CPU)
#   cpu          ctest -L cpu (optional: the GPU machine may lack the interop tests' Python)
#   all          build cuda bench-short bench-long cpu, in one go (not within one 600 s command)
#
# Every stage writes its log and a summary (tests passed/failed/skipped, every benchmark figure
# with its limit) to $OUT/<stage>.log and $OUT/<stage>.md, and $OUT/summary.md gathers the
# summaries of every stage run so far in this build folder. A stage exits non-zero on any
# failure; only the rehearsal lets a test skip for want of a device.
#
# Device calls (carry [".gpu-debs"] each time; scripts/gpu-prepare.sh makes it):
#   bash scripts/gpu-run.sh build          (bounded at 540 s; cut off there, run it again: it resumes)
#   bash scripts/gpu-run.sh cuda           (estimate: 1-4 min; bounded at 510 s)
#   bash scripts/gpu-run.sh bench-short    (bounded at 465 s by the per-benchmark timeouts)
#   bash scripts/gpu-run.sh bench-long     (bounded at 480 s)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

die() { echo "gpu-run.sh: $*" >&2; exit 1; }

rehearse=0
stages=()
for a in "$@"; do
  case $a in
    --rehearse) rehearse=1 ;;
    build | cuda | bench-short | bench-long | cpu) stages+=("$a") ;;
    all) stages+=(build cuda bench-short bench-long cpu) ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-run.sh: unknown argument '$a' (stages: build cuda bench-short bench-long cpu all; or --rehearse)" >&2
       exit 2 ;;
  esac
done
if [ ${#stages[@]} -eq 0 ]; then
  [ "$rehearse" = 1 ] || die "name a stage: build, cuda, bench-short, bench-long, cpu or all (--help says more)"
  stages=(build cuda bench-short bench-long)
fi

# --- the rehearsal's isolation ------------------------------------------------------------------
# A fresh GPU machine has none of the carried packages. The rehearsal hides every one of them
# that this machine has installed (headers, .pc files, libraries, CMake files, pkg-config, the
# Open MPI launchers, the alternatives links into them) under an overlay of /usr with whiteouts,
# in a private mount namespace, and runs this script again inside it. Runtime libraries that
# this machine's own tools load (libpcre2-8 for grep, libxml2 for CMake) stay visible: the GPU
# machine's tools bring their own.
if [ "$rehearse" = 1 ] && [ -z "${FORGIA_REHEARSE_INSIDE:-}" ]; then
  ls .gpu-debs/*.deb >/dev/null 2>&1 || die "no .gpu-debs/*.deb: run scripts/gpu-prepare.sh first"
  [ "$(id -u)" = 0 ] || die "--rehearse needs root (a mount namespace with an overlay of /usr)"
  command -v unshare >/dev/null || die "--rehearse needs unshare (util-linux)"
  ov=$root/build-rehearse-overlay
  rm -rf "$ov" && mkdir -p "$ov/upper" "$ov/work" && : >"$ov/hide.txt"
  keep=$(for t in bash mkdir cp sed grep awk find xargs sort tar dpkg dpkg-deb cmake ctest make gcc g++ python3 timeout \
    mount; do
    if command -v "$t" >/dev/null; then ldd "$(command -v "$t")" 2>/dev/null || true; fi
  done | awk '/=> \//{print $3}' | xargs -r realpath | sort -u)
  for f in .gpu-debs/*.deb; do
    pkg=$(dpkg-deb -f "$f" Package)
    [[ $(dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null || true) == *"ok installed" ]] || continue
    files=$(dpkg-query -L "$pkg" | while read -r p; do
      case $p in /lib/* | /bin/* | /sbin/*) p=/usr$p ;; esac
      case $p in /usr/*) ;; *) continue ;; esac
      if [ -L "$p" ] || { [ -e "$p" ] && [ ! -d "$p" ]; }; then echo "$p"; fi
    done)
    # The package's own library files (not -dev links into another package's files).
    if [ -n "$keep" ] && echo "$files" | while read -r p; do if [ -f "$p" ] && [ ! -L "$p" ]; then echo "$p"; fi; done |
      xargs -r realpath -q 2>/dev/null | grep -xF -f <(echo "$keep") >/dev/null; then
      echo "rehearse: keeping $pkg visible (this machine's tools load it)"
      continue
    fi
    echo "$files" >>"$ov/hide.txt"
  done
  # Debian's alternatives links into the hidden packages (BLAS, LAPACK, OpenBLAS, Open MPI).
  for l in /usr/lib/x86_64-linux-gnu/pkgconfig/*.pc /usr/lib/x86_64-linux-gnu/lib*.so* /usr/include/x86_64-linux-gnu/* \
    /usr/lib/x86_64-linux-gnu/cmake/openblas/* /usr/bin/mpi* /usr/bin/pkg-config; do
    if [ -L "$l" ] && [[ $(readlink "$l") == /etc/alternatives/* ]]; then echo "$l" >>"$ov/hide.txt"; fi
  done
  # An overlay whiteout (a 0:0 character device) for each, in one process.
  python3 - "$ov/upper" "$ov/hide.txt" <<'PY'
import os, sys
upper, n = sys.argv[1], 0
for p in open(sys.argv[2]).read().split():
    w = upper + p[len("/usr"):]
    os.makedirs(os.path.dirname(w), exist_ok=True)
    if not os.path.lexists(w):
        os.mknod(w, 0o600 | 0o020000, os.makedev(0, 0))
        n += 1
print(f"rehearse: hiding {n} files of the carried packages")
PY
  # A sandbox that refuses mount namespaces or overlays cannot hide them: the rehearsal then
  # still builds and runs against the prefix, says loudly that nothing was hidden, and skips
  # the visibility check (the build may have picked up a system copy).
  if unshare -m --propagation private bash -c \
    'mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1/upper,workdir=$1/work" /usr' _ "$ov" 2>/dev/null; then
    exec unshare -m --propagation private env FORGIA_REHEARSE_INSIDE=1 bash -c '
      mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1/upper,workdir=$1/work" /usr || exit 1
      shift; exec bash "$@"' _ "$ov" "$0" "$@"
  fi
  echo "rehearse: WARNING: this machine refuses a mount namespace with an overlay of /usr; the system's"
  echo "rehearse: WARNING: copies of the carried packages stay visible, so this rehearsal does not prove isolation"
  export FORGIA_REHEARSE_INSIDE=1 FORGIA_REHEARSE_UNHIDDEN=1
fi

# --- where things go ------------------------------------------------------------------------
if [ "$rehearse" = 1 ]; then
  [ -n "${FORGIA_REHEARSE_UNHIDDEN:-}" ] || while read -r p; do
    if [ -n "$p" ] && { [ -e "$p" ] || [ -L "$p" ]; }; then die "rehearse: $p is still visible"; fi
  done <"$root/build-rehearse-overlay/hide.txt"
  B=$root/build-rehearse
  # One architecture and only the targets the GPU stages run: the rehearsal checks that the
  # path configures, builds and runs, not the second architecture (FORGIA_REHEARSE_ARCH,
  # FORGIA_REHEARSE_TARGETS=all to widen it).
  arch=${FORGIA_REHEARSE_ARCH:-90}
else
  B=$root/build-gpu
  arch="80;90"
fi
P=$B/deps                    # the unpacked packages
S=$B/gpu-run                 # every stage's log and summary, kept across device calls
OUT=${OUT:-$B/out}
mkdir -p "$S" "$OUT"
M=$P/usr/lib/x86_64-linux-gnu
jobs=$(nproc 2>/dev/null || echo 2)

# --- the prefix -------------------------------------------------------------------------------
# dpkg -x unpacks files only: what the packages' maintainer scripts would do is done here —
# the alternatives links (openblas.pc, libblas/liblapack, cblas.h, mpicc, mpirun...), the
# usr-merge of /lib, and .pc files pointing into the prefix.
alt() { # alt TARGET LINK: LINK -> TARGET (relative to LINK's folder), the target must exist
  mkdir -p "$(dirname "$2")"
  [ -e "$(dirname "$2")/$1" ] || die "prefix: $2 -> $1: the target is not in the carried packages"
  ln -sfn "$1" "$2"
}
make_prefix() {
  ls .gpu-debs/*.deb >/dev/null 2>&1 ||
    die "no .gpu-debs/*.deb: run scripts/gpu-prepare.sh where Debian's registry is reachable, and carry .gpu-debs"
  command -v dpkg >/dev/null || die "dpkg is needed to unpack .gpu-debs"
  rm -rf "$P" && mkdir -p "$P"
  for f in .gpu-debs/*.deb; do dpkg -x "$f" "$P"; done
  for d in lib bin sbin; do
    if [ -d "$P/$d" ] && [ ! -L "$P/$d" ]; then
      mkdir -p "$P/usr/$d" && cp -a "$P/$d/." "$P/usr/$d/" && rm -rf "${P:?}/$d" && ln -s "usr/$d" "$P/$d"
    fi
  done
  local I=$P/usr/include/x86_64-linux-gnu ob=openblas-pthread
  for l in libblas.so libblas.so.3 liblapack.so liblapack.so.3 libopenblas.so libopenblas.so.0 libblas.a liblapack.a \
    libopenblas.a; do
    alt "$ob/$l" "$M/$l"
  done
  alt "../$ob/pkgconfig/openblas.pc" "$M/pkgconfig/openblas.pc"
  alt "../$ob/pkgconfig/blas-openblas.pc" "$M/pkgconfig/blas.pc"
  alt "../$ob/pkgconfig/lapack-openblas.pc" "$M/pkgconfig/lapack.pc"
  alt "$ob/cblas.h" "$I/cblas.h"
  alt "$ob/cblas.h" "$I/cblas-openblas.h"
  alt "$ob/f77blas.h" "$I/f77blas.h"
  alt "$ob/openblas_config.h" "$I/openblas_config.h"
  for f in OpenBLASConfig.cmake OpenBLASConfigVersion.cmake; do alt "../../$ob/cmake/openblas/$f" "$M/cmake/openblas/$f"; done
  for w in mpicc mpif77 mpif90 mpifort; do alt "$w.openmpi" "$P/usr/bin/$w"; done
  for w in mpic++ mpicxx mpiCC; do alt mpic++.openmpi "$P/usr/bin/$w"; done
  alt mpirun.openmpi "$P/usr/bin/mpirun"
  alt mpiexec.openmpi "$P/usr/bin/mpiexec"
  alt openmpi/lib/libmpi.so "$M/libmpi.so"
  alt openmpi/lib/libmpi_cxx.so "$M/libmpi++.so"
  for pc in mpi:ompi mpi-c:ompi-c mpi-cxx:ompi-cxx mpi-fort:ompi-fort; do alt "${pc#*:}.pc" "$M/pkgconfig/${pc%%:*}.pc"; done
  alt ../../lib/x86_64-linux-gnu/openmpi/include "$I/mpi"
  # The .pc files name /usr; point them at the prefix.
  find "$P" -name '*.pc' -type f -exec sed -E -i "s#^([A-Za-z_][A-Za-z0-9_]*)=/usr(/|\$)#\\1=$P/usr\\2#" {} +
  # The libraries this machine cannot load from its own folders, one folder of links for
  # LD_LIBRARY_PATH: the host's own copies stay first for its tools (CMake loads libxml2).
  mkdir -p "$P/ld"
  local -A host=()
  local n p
  while read -r n p; do [ -n "${host[$n]:-}" ] || host[$n]=$p; done < <(ldconfig -p 2>/dev/null | awk '/=> \//{print $1" "$NF}')
  for so in "$M"/*.so.* "$M/$ob"/*.so.* "$M"/openmpi/lib/*.so.*; do
    [ -e "$so" ] || continue
    n=$(basename "$so")
    p=${host[$n]:-}
    if [ -z "$p" ] || [ ! -e "$p" ]; then ln -sfn "$so" "$P/ld/$n"; fi
  done
  touch "$P/.done"
}
[ -f "$P/.done" ] || make_prefix
export PATH=$P/usr/bin:$PATH
export LD_LIBRARY_PATH=$P/ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG=$P/usr/bin/pkgconf
export PKG_CONFIG_LIBDIR=$M/pkgconfig:$P/usr/share/pkgconfig
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# What the compiler and linker search by default on Debian (/usr/include/x86_64-linux-gnu holds
# hwloc/autogen/config.h, which hwloc.pc does not name), in the prefix.
export CPATH=$P/usr/include/x86_64-linux-gnu:$P/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$M${LIBRARY_PATH:+:$LIBRARY_PATH}
# Open MPI from the prefix: its wrappers, launcher, components and help files.
export OPAL_PREFIX=$P/usr OPAL_LIBDIR=$M/openmpi/lib OPAL_INCLUDEDIR=$M/openmpi/include
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$PKG_CONFIG" --modversion openblas >/dev/null || die "prefix: pkgconf cannot run or does not find openblas.pc"
mpicc --showme:version >/dev/null 2>&1 || die "prefix: the carried mpicc does not run: $(mpicc --showme:version 2>&1 | tail -n 2)"

# --- helpers --------------------------------------------------------------------------------
py=python3
if [ -x "$root/.venv/bin/python3" ]; then py=$root/.venv/bin/python3; fi
summary() { # gather every stage's summary, in stage order, into $OUT and copy the logs there
  {
    echo "# forgia GPU run$([ "$rehearse" = 1 ] && echo " (rehearsal, no GPU)")"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), build folder $(basename "$B"), CUDA architectures $arch"
    if [ -s "$S/nvidia-smi.txt" ]; then echo; sed 's/^/    /' "$S/nvidia-smi.txt"; fi
    local st
    for st in build cuda bench-short bench-long cpu; do
      if [ -f "$S/$st.md" ]; then echo; cat "$S/$st.md"; fi
    done
  } >"$S/summary.md"
  if [ "$(cd "$OUT" && pwd)" != "$(cd "$S" && pwd)" ]; then cp -f "$S"/*.md "$S"/*.log "$S"/*.jsonl "$S"/*.txt "$OUT"/ 2>/dev/null || true; fi
}
need_build() { [ -f "$B/.gpu-run-built" ] || die "stage $1: run the build stage first (no $B/.gpu-run-built)"; }
gpu_preflight() { # the GPU run: a device must show, or every later figure means nothing
  nvidia-smi >"$S/nvidia-smi.txt" 2>&1 || die "nvidia-smi fails: $(tail -n 3 "$S/nvidia-smi.txt")"
  nvidia-smi -L >>"$S/nvidia-smi.txt" 2>&1 || true
  "$B/tools/forgia" devices >"$S/devices.txt" 2>&1 || die "forgia devices fails: $(tail -n 3 "$S/devices.txt")"
  grep -q '^cuda:0' "$S/devices.txt" || die "forgia sees no CUDA device although nvidia-smi does: $(cat "$S/devices.txt")"
}

# --- stages ---------------------------------------------------------------------------------
stage_build() {
  local log=$S/build.log nccl_home=""
  # NCCL: the toolkit's, else the one PyTorch's wheels bring (nvidia-nccl-cu*).
  for d in "${CUDA_HOME:-/usr/local/cuda}" /usr/local /usr; do
    if [ -f "$d/include/nccl.h" ]; then nccl_home=$d; break; fi
  done
  if [ -z "$nccl_home" ]; then
    nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)
  fi
  local args=(-DFORGIA_CUDA=ON -DFORGIA_MPI=ON -DFORGIA_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES="$arch"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$P/usr" -DGTest_DIR="$M/cmake/GTest"
    -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG" -DMPI_C_COMPILER="$P/usr/bin/mpicc" -DMPI_CXX_COMPILER="$P/usr/bin/mpicxx"
    -DMPIEXEC_EXECUTABLE="$P/usr/bin/mpiexec" -DFORGIA_PYTHON="$(command -v "$py")")
  # Warnings fail the rehearsal (this machine's compilers are CI's); on the GPU machine, whose
  # toolchain may differ, they are counted in the summary instead of ending the run.
  [ "$rehearse" = 0 ] || args+=(-DFORGIA_WERROR=ON)
  if command -v ccache >/dev/null; then
    args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  local targets=()
  if [ "$rehearse" = 1 ] && [ "${FORGIA_REHEARSE_TARGETS:-}" != all ]; then
    targets=(--target forgia_cli mpi_nccl_check)
    for f in tests/cuda/test_*.cpp; do targets+=("cuda_$(basename "$f" .cpp)"); done
    for f in bench/bench_*.c; do targets+=("$(basename "$f" .c)"); done
  fi
  rm -f "$B/.gpu-run-built"
  NCCL_HOME=$nccl_home cmake -S . -B "$B" "${args[@]}" >"$log" 2>&1 || { tail -n 30 "$log"; return 1; }
  grep -q '^-- forgia: CUDA backend ON' "$log" || { echo "configure: the CUDA backend is off"; return 1; }
  grep -q '^-- forgia: MPI communicator ON, NCCL communicator ON' "$log" ||
    { grep '^-- forgia: MPI' "$log"; echo "configure: MPI or NCCL is off"; return 1; }
  # Bounded so that the stage ends inside one device command and says so; make keeps what it
  # built, and the stage run again resumes there.
  # The rehearsal, on CI's 2 cores, has no such bound (a budget of 0).
  local rc=0 budget=${FORGIA_BUILD_BUDGET:-540}
  if [ "$rehearse" = 1 ]; then budget=${FORGIA_BUILD_BUDGET:-0}; fi
  timeout "$budget" cmake --build "$B" -j "$jobs" ${targets[@]+"${targets[@]}"} >>"$log" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then
    echo "build: stopped after its budget of $budget s; run the build stage again to resume" | tee -a "$log"
    return 1
  fi
  if [ "$rc" != 0 ]; then grep -E 'error|Error' "$log" | head -n 30; return 1; fi
  touch "$B/.gpu-run-built"
}

ctest_group() { # ctest_group LOG BUDGET_S ARGS...: one ctest run, bounded; its exit status
  local log=$1 budget=$2
  shift 2
  local rc=0
  (cd "$B" && timeout "$budget" ctest --output-on-failure "$@") >>"$log" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then echo "ctest $*: stopped after its budget of $budget s" >>"$log"; fi
  return "$rc"
}

stage_cuda() {
  need_build cuda
  local log=$S/cuda.log rc=0
  : >"$log"
  if [ "$rehearse" = 0 ]; then
    gpu_preflight
    export FORGIA_TEST_REQUIRE_CUDA=1 # a test that skips for want of a device fails here
  fi
  # First what a GPU run must answer before all else: bit-equal exact GEMM and every kernel
  # family's CUDA-against-CPU memcmp, then the rest of the label.
  local first='^cuda\.(CudaGemm\.Exact|.*CudaFamilies)'
  ctest_group "$log" 150 -L cuda -R "$first" || rc=1
  ctest_group "$log" 360 -L cuda -E "$first" -j 4 || rc=1
  if ! grep -q 'Test *#' "$log"; then echo "no CUDA test ran" >>"$log"; rc=1; fi
  return "$rc"
}

bench_run() { # bench_run STAGE SPEC...: SPEC is name:timeout[:args], args comma-separated
  local stage=$1 rc=0
  shift
  local log=$S/$stage.log jsonl=$S/$stage.jsonl status=$S/$stage.status
  : >"$log"; : >"$jsonl"; : >"$status"
  [ "$rehearse" = 1 ] || gpu_preflight
  for spec in "$@"; do
    IFS=: read -r name secs args <<<"$spec"
    local exe=$B/bench/$name r=0 t0=$SECONDS
    local argv=()
    [ -n "$args" ] && IFS=, read -r -a argv <<<"$args"
    [ -x "$exe" ] || { echo "$name missing" >>"$log"; echo "$name missing 0" >>"$status"; rc=1; continue; }
    echo "== $name ${argv[*]}" >>"$log"
    if [ "$rehearse" = 1 ]; then
      # No GPU: the benchmark starts, links its libraries and answers --help.
      "$exe" --help >>"$log" 2>&1 || r=$?
    else
      timeout "$secs" "$exe" ${argv[@]+"${argv[@]}"} >"$S/$name.out" 2>>"$log" || r=$?
      cat "$S/$name.out" >>"$log"
      grep '^{' "$S/$name.out" >>"$jsonl" || true
    fi
    echo "$name${args:+[$args]} $r $((SECONDS - t0))" >>"$status"
    [ "$r" = 0 ] || { echo "$name: exit $r" >>"$log"; rc=1; }
  done
  return "$rc"
}

# Timeouts sum to 465 s (short) and 480 s (long): each stage fits one 600 s command.
stage_bench_short() {
  need_build bench-short
  bench_run bench-short bench_gemm:90 bench_ops:60 bench_reduce:60 bench_convert:60 bench_rng:45 bench_optim:90 \
    bench_es:60:--device,cuda:0
}
stage_bench_long() {
  need_build bench-long
  bench_run bench-long bench_load:100 bench_open:60 bench_quant:100 bench_ptqtp:80 bench_tokenize:60 bench_es:80
}
stage_cpu() {
  need_build cpu
  local log=$S/cpu.log
  : >"$log"
  ctest_group "$log" 540 -L cpu -j "$jobs"
}

# --- run the stages -------------------------------------------------------------------------
status=0
for s in "${stages[@]}"; do
  t0=$SECONDS
  rc=0
  echo "== stage $s"
  case $s in
    build) stage_build || rc=$? ;;
    cuda) stage_cuda || rc=$? ;;
    bench-short) stage_bench_short || rc=$? ;;
    bench-long) stage_bench_long || rc=$? ;;
    cpu) stage_cpu || rc=$? ;;
  esac
  secs=$((SECONDS - t0))
  case $s in
    build) python3 scripts/gpu-summary.py build "$s" "$secs" "$rc" "$S/build.log" >"$S/$s.md" ;;
    cuda | cpu) python3 scripts/gpu-summary.py tests "$s" "$secs" "$rc" "$S/$s.log" >"$S/$s.md" ;;
    bench-*) python3 scripts/gpu-summary.py bench "$s" "$secs" "$rc" "$S/$s.jsonl" "$S/$s.status" >"$S/$s.md" ;;
  esac
  summary
  cat "$S/$s.md"
  if [ "$rc" != 0 ]; then
    status=1
    echo "== stage $s FAILED (exit $rc, $secs s): $S/$s.log" >&2
    tail -n 25 "$S/$s.log" >&2 || true
    [ "$s" = build ] && break # nothing after a failed build can run
  fi
done
exit "$status"
