/* bine/cuda_api.h: the C types of the CUDA target's generated functions (docs/cuda.md).
 * Plain C; no CUDA header needed. */
#ifndef BINE_CUDA_API_H
#define BINE_CUDA_API_H

/* Element types of the device collectives (bytes: 4, 8, 1, 4, 8, 2, 2). */
typedef enum {
  BINE_CUDA_INT32 = 0,
  BINE_CUDA_INT64 = 1,
  BINE_CUDA_UINT8 = 2,
  BINE_CUDA_FLOAT32 = 3,
  BINE_CUDA_FLOAT64 = 4,
  BINE_CUDA_FLOAT16 = 5,  /* IEEE binary16 (__half) */
  BINE_CUDA_BFLOAT16 = 6  /* bfloat16 (__nv_bfloat16) */
} bine_cuda_dtype_t;
#define BINE_CUDA_DTYPE_COUNT 7

/* Reduction operators. */
typedef enum { BINE_CUDA_SUM = 0, BINE_CUDA_PROD = 1, BINE_CUDA_MIN = 2, BINE_CUDA_MAX = 3 } bine_cuda_op_t;
#define BINE_CUDA_OP_COUNT 4

/* Results of every function of the target: 0 on success, else one of these; the calling
 * thread's <prefix>cuda_last_error() says why. Nothing is enqueued or written on error. */
enum {
  BINE_CUDA_SUCCESS = 0,
  BINE_CUDA_ERR_ARG = 1,         /* a bad argument: NULL, host pointer, root, in-place misuse, wrong communicator kind */
  BINE_CUDA_ERR_TYPE = 2,        /* a datatype outside bine_cuda_dtype_t */
  BINE_CUDA_ERR_OP = 3,          /* an operator outside bine_cuda_op_t */
  BINE_CUDA_ERR_REQUIRES = 4,    /* the schedule does not apply at this p (its `requires`) */
  BINE_CUDA_ERR_NO_MEM = 5,      /* a device or host allocation failed */
  BINE_CUDA_ERR_CUDA = 6,        /* a CUDA runtime call failed */
  BINE_CUDA_ERR_TRANSPORT = 7,   /* NCCL or MPI failed */
  BINE_CUDA_ERR_DEVICE = 8,      /* a buffer or stream of another device than the communicator's */
  BINE_CUDA_ERR_OTHER = 9        /* a domain error of the schedule's arithmetic, an internal error */
};

/* A communicator of the CUDA target: p ranks over NCCL, CUDA-aware MPI, or p virtual ranks
 * in one process (the in-process transport). Created and freed by the generated
 * <prefix>cuda_comm_* functions. */
typedef struct bine_cuda_comm_s* bine_cuda_comm_t;

#endif
