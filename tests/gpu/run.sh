#!/bin/sh
# The CUDA target's GPU test and benchmark (docs/cuda.md, "Tests").
#
#   tests/gpu/run.sh [--compile-only] [GEN_DIR]
#
# GEN_DIR holds the library's bine_lib.h and bine_lib.h.cu (`bine-cc compile dsl/lib/*.bine
# --target cuda`; default build/generated_cuda, made by the build). Builds with nvcc -Werror
# for sm_80 and sm_90 plus PTX:
#   1. the .cu part as a shared library with the NCCL and CUDA-aware MPI transports
#      (-DBINE_CUDA_WITH_NCCL -DBINE_CUDA_WITH_MPI, -lnccl, no undefined symbols);
#   2. gpu_test: tests/device/device_host.cpp with -DBINE_DEVICE_GPU (every schedule in
#      process on the GPU against the CPU reference, p = 1..16, half/bfloat16, the
#      non-commutative checks on the host path, a CUDA graph capture, bad inputs);
#   3. cuda_bench (bench/cuda_bench.cu).
# Then, unless --compile-only, runs gpu_test and cuda_bench where a GPU exists; without one
# it says so and exits 0 (the CPU tests, ctest device_host / device_rounds, still ran).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
compile_only=0
if [ "${1:-}" = "--compile-only" ]; then compile_only=1; shift; fi
gen=${1:-$src/build/generated_cuda}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
out=${BINE_GPU_OUT:-$(mktemp -d)}
[ -f "$gen/bine_lib.h.cu" ] || { echo "run.sh: $gen/bine_lib.h.cu missing (build first)"; exit 2; }
arch="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
flags="-std=c++17 -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I$src/runtime/include -I$gen"
mpi_inc=$(mpicxx --showme:compile 2>/dev/null || true)
mpi_lib=$(mpicxx --showme:link 2>/dev/null || true)
echo "run.sh: nvcc $($nvcc --version | tail -1)"
# shellcheck disable=SC2086
$nvcc $flags $arch $mpi_inc -DBINE_CUDA_WITH_NCCL -DBINE_CUDA_WITH_MPI -Xcompiler -fPIC -shared \
  -Xlinker --no-undefined "$gen/bine_lib.h.cu" -o "$out/libbine_lib_cuda.so" -lnccl $mpi_lib &
lib=$!
# shellcheck disable=SC2086
$nvcc $flags $arch -DBINE_DEVICE_GPU -DBINE_DEVICE_SOURCE='"bine_lib.h.cu"' -x cu "$src/tests/device/device_host.cpp" \
  -o "$out/gpu_test"
# shellcheck disable=SC2086
$nvcc $flags $arch -DBINE_DEVICE_SOURCE='"bine_lib.h.cu"' "$src/bench/cuda_bench.cu" -o "$out/cuda_bench"
# The header as a C user includes it (C99, -Werror). The CUDA include directory is the one
# nvcc itself passes (its --dryrun INCLUDES line), so a symlinked nvcc or a targets/ layout
# still finds cuda_runtime_api.h.
cuda_inc=$($nvcc --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ INCLUDES="-I\([^"]*\)".*/\1/p' | head -1)
[ -n "$cuda_inc" ] || cuda_inc=$(cd "$(dirname "$(readlink -f "$nvcc")")/../include" && pwd)
echo "run.sh: CUDA include directory $cuda_inc"
printf '#include "bine_lib.h"\nint main(void) { return 0; }\n' |
  gcc -std=c99 -Wall -Wextra -Werror -fsyntax-only -I"$src/runtime/include" -I"$gen" -I"$cuda_inc" -x c -
wait $lib
echo "run.sh: built libbine_lib_cuda.so, gpu_test, cuda_bench in $out"
[ $compile_only = 1 ] && exit 0
"$out/gpu_test" gpu 16
"$out/cuda_bench" 8
