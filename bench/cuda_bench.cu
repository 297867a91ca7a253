// CUDA target benchmark (docs/cuda.md, "Benchmark"): prints figures, asserts nothing.
//
//   cuda_bench [P]
//
// 1. The reduction kernel (bine/device_kernels.hpp through bine::cuda::batch_kernel, float
//    sum, dst = a + b) against cudaMemcpy device to device on the same GPU, 1 MiB..1 GiB:
//    effective bandwidth = bytes the operation must move / time (reduce: 3 n bytes, copy:
//    2 n), and their ratio, side by side in one run (target: >= 0.85 from 64 MiB).
// 2. In-process allreduce of P virtual ranks (default 8) on one GPU, 1 KiB..1 GiB per rank,
//    for every allreduce schedule of the library: time per call and nccl-tests style
//    algbw = size / time, busbw = algbw * 2 (P - 1) / P. All ranks share one GPU, so busbw is
//    bounded by its memory bandwidth, not by a network.
// Build: tests/gpu/run.sh builds it next to the GPU test (nvcc, the library's .cu part).
#include BINE_DEVICE_SOURCE

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                           \
  do {                                                                                  \
    const cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace {

template <class F>
float time_ms(cudaStream_t st, int iters, F f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f();  // warm-up (plans, caches)
  CK(cudaStreamSynchronize(st));
  CK(cudaEventRecord(a, st));
  for (int i = 0; i < iters; ++i) f();
  CK(cudaEventRecord(b, st));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / float(iters);
}

void kernel_vs_memcpy(cudaStream_t st) {
  std::printf("# reduction kernel (float sum) vs cudaMemcpy D2D\n");
  std::printf("%12s %14s %14s %8s\n", "bytes", "reduce GB/s", "memcpy GB/s", "ratio");
  for (size_t bytes = size_t(1) << 20; bytes <= size_t(1) << 30; bytes <<= 2) {
    const size_t n = bytes / 4;
    char *a, *b, *d;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemset(a, 0, bytes));
    CK(cudaMemset(b, 0, bytes));
    bine::dev::Batches batches;
    bine::dev::append_batches({bine::dev::DevOp{1, 0, 1, 2, 0, 0, 0, n}}, batches);
    bine::dev::DevOp* d_ops;
    bine::dev::Tile* d_tiles;
    CK(cudaMalloc(&d_ops, sizeof(bine::dev::DevOp)));
    CK(cudaMemcpy(d_ops, batches.ops.data(), sizeof(bine::dev::DevOp), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_tiles, batches.tiles.size() * sizeof(bine::dev::Tile)));
    CK(cudaMemcpy(d_tiles, batches.tiles.data(), batches.tiles.size() * sizeof(bine::dev::Tile), cudaMemcpyHostToDevice));
    bine::cuda::Bases<4> bases{{d, a, b, nullptr}};
    const uint32_t nt = uint32_t(batches.tiles.size());
    const int iters = bytes >= (size_t(1) << 28) ? 5 : 20;
    const float kr = time_ms(st, iters, [&] {
      bine::cuda::batch_kernel<BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 4>
          <<<nt < 2048 ? nt : 2048, 256, 0, st>>>(d_ops, d_tiles, 0, nt, bases, 4);
    });
    const float km = time_ms(st, iters, [&] { CK(cudaMemcpyAsync(d, a, bytes, cudaMemcpyDeviceToDevice, st)); });
    const double gr = 3.0 * double(bytes) / (kr * 1e6), gm = 2.0 * double(bytes) / (km * 1e6);
    std::printf("%12zu %14.1f %14.1f %8.3f\n", bytes, gr, gm, gr / gm);
    cudaFree(a), cudaFree(b), cudaFree(d), cudaFree(d_ops), cudaFree(d_tiles);
  }
}

void inproc_allreduce(cudaStream_t st, int p) {
  bine_cuda_comm_t comm;
  if (bine::cuda::comm_init_inproc(p, &comm) != 0) {
    std::printf("comm: %s\n", bine::cuda::error_text());
    std::exit(1);
  }
  std::printf("# in-process allreduce, p = %d virtual ranks on one GPU (float sum)\n", p);
  std::printf("%-32s %12s %12s %12s %12s\n", "schedule", "bytes", "time us", "algbw GB/s", "busbw GB/s");
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  for (size_t k = 0; k < bine_device_schedule_count; ++k) {
    const bine::dev::Schedule& s = bine_device_schedules[k];
    if (s.kind != bine::Collective::allreduce) continue;
    for (size_t bytes = 1024; bytes <= (size_t(1) << 30); bytes <<= 4) {
      if (bytes * size_t(p) * 5 > free_b) break;  // buffers, working and staging memory
      std::vector<void*> sb(static_cast<size_t>(p)), rb(static_cast<size_t>(p));
      for (int r = 0; r < p; ++r) {
        CK(cudaMalloc(&sb[size_t(r)], bytes));
        CK(cudaMalloc(&rb[size_t(r)], bytes));
        CK(cudaMemset(sb[size_t(r)], 0, bytes));
      }
      int rc = 0;
      const float ms = time_ms(st, bytes >= (size_t(1) << 26) ? 3 : 20, [&] {
        rc |= bine::cuda::run_inproc(s, sb.data(), rb.data(), bytes / 4, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, st);
      });
      if (rc != 0) {
        std::printf("%-32s %12zu   %s\n", s.function, bytes, bine::cuda::error_text());
      } else {
        const double alg = double(bytes) / (ms * 1e6);
        std::printf("%-32s %12zu %12.1f %12.2f %12.2f\n", s.function, bytes, ms * 1e3, alg, alg * 2.0 * (p - 1) / p);
      }
      for (int r = 0; r < p; ++r) cudaFree(sb[size_t(r)]), cudaFree(rb[size_t(r)]);
    }
    bine::cuda::comm_free(&comm);  // drops the schedule's plans (device memory)
    bine::cuda::comm_init_inproc(p, &comm);
  }
  bine::cuda::comm_free(&comm);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cuda_bench: skipped: no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("cuda_bench on %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  kernel_vs_memcpy(st);
  inproc_allreduce(st, argc > 1 ? std::atoi(argv[1]) : 8);
  return 0;
}
