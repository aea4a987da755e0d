/*===- run_cost.c - the host cost of one attnc_run ------------------------===*\
|*                                                                            *|
|* Issue 46: what an engine pays on the host per attention launch, through    *|
|* the C API alone. A tiny decode variant (bf16, 32 query heads, 8 KV heads,  *|
|* head dim 128, dense, one query per request) is compiled and planned once   *|
|* for batch 1 x kv_len 512; then N attnc_run calls go back to back on one    *|
|* stream with no synchronization inside the timed loop, and the host's wall  *|
|* time per call is the figure (CLOCK_MONOTONIC, median of the repetitions).  *|
|* Beside it, the floor: as many bare cuLaunchKernel calls of an empty kernel *|
|* whose one parameter is as large as the attention kernel's (AttnParams).    *|
|*                                                                            *|
|*   attnc-run-cost [--runs N] [--reps R] [--chunk C] [--queries Q]           *|
|*                                                                            *|
|* --queries Q (default 1) makes each request Q queries: a prefill-shaped     *|
|* launch, which on sm_90a is the warp-specialized CTA loading through tensor *|
|* maps, so that the cost of its maps per run shows.                          *|
|*                                                                            *|
|* One `key=value` line per figure:                                           *|
|*   device=NAME                                                              *|
|*   run_us_per_call=      N calls back to back, the sync after them untimed  *|
|*   run_us_per_call_chunked=  the same calls in chunks of C (default 64),    *|
|*                         each chunk timed alone, the GPU drained between:   *|
|*                         the host's cost even where the GPU is slower than  *|
|*                         the host and a long loop fills the launch queue    *|
|*                         (then run_us_per_call measures the GPU instead)    *|
|*   run_us_per_call_synced= back to back with the final sync timed: the      *|
|*                         launches' throughput, host or GPU, whichever binds *|
|*   launch_us_per_call=, launch_us_per_call_chunked=   the floor, likewise   *|
|*   run_overhead_us=      run_us_per_call_chunked minus                      *|
|*                         launch_us_per_call_chunked: what attnc adds        *|
|* Without a GPU it prints "skipped: no GPU (reason)" and exits 0.            *|
|*                                                                            *|
|* libcuda is opened with dlopen, as libattnc opens it, so that this builds   *|
|* and runs (skipping) on a machine without a CUDA driver.                    *|
\*===----------------------------------------------------------------------===*/

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, dlopen */
#endif
#include "attnc/attnc_c.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The CUDA driver API entry points used here, as cuda.h declares them. */
typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDeviceGetName)(char *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemsetD16_v2)(CUdeviceptr, unsigned short, size_t);
  CUresult (*cuMemsetD8_v2)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
} cu;

#define NO_DEVICE 100 /* CUDA_ERROR_NO_DEVICE */

/* Bytes of the attention kernel's one parameter, sizeof(AttnParams)
 * (device/attnc/device/params.h) on x86-64: the floor's parameter is as
 * large, since the driver copies it into every launch (kFloorPtx spells
 * it too). */
#define PARAM_BYTES 496

static int fail(const char *what) {
  fprintf(stderr, "attnc-run-cost: %s\n", what);
  return 1;
}

static int skip(const char *reason, const char *detail) {
  printf("skipped: no GPU (%s%s%s)\n", reason, detail ? ": " : "",
         detail ? detail : "");
  return 0;
}

static int checkCu(CUresult result, const char *call) {
  if (result == 0)
    return 0;
  const char *message = NULL;
  if (cu.cuGetErrorString)
    cu.cuGetErrorString(result, &message);
  fprintf(stderr, "attnc-run-cost: %s failed with %d (%s)\n", call, result,
          message ? message : "unknown");
  return 1;
}

static int check(attnc_status status, const char *call) {
  if (status == ATTNC_OK)
    return 0;
  fprintf(stderr, "attnc-run-cost: %s: %s: %s\n", call,
          attnc_status_name(status), attnc_last_error());
  return 1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int count) {
  qsort(values, (size_t)count, sizeof *values, compareDoubles);
  return count % 2 ? values[count / 2]
                   : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

/* Loads libcuda and its entry points; 1 with `reason` set when there is
 * no driver or no GPU. */
static int openDriver(const char **reason, const char **detail) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    static char first[512];
    snprintf(first, sizeof first, "%s", dlerror());
    library = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      *reason = "no CUDA driver (libcuda)";
      *detail = first;
      return 1;
    }
  }
#define LOAD(name)                                                             \
  *(void **)(&cu.name) = dlsym(library, #name);                                \
  if (!cu.name) {                                                              \
    *reason = "libcuda lacks " #name;                                          \
    return 1;                                                                  \
  }
  LOAD(cuInit)
  LOAD(cuDeviceGetCount)
  LOAD(cuDeviceGet)
  LOAD(cuDeviceGetName)
  LOAD(cuDevicePrimaryCtxRetain)
  LOAD(cuCtxSetCurrent)
  LOAD(cuMemAlloc_v2)
  LOAD(cuMemsetD16_v2)
  LOAD(cuMemsetD8_v2)
  LOAD(cuMemcpyDtoH_v2)
  LOAD(cuStreamCreate)
  LOAD(cuStreamSynchronize)
  LOAD(cuModuleLoadData)
  LOAD(cuModuleGetFunction)
  LOAD(cuLaunchKernel)
  LOAD(cuGetErrorString)
#undef LOAD
  CUresult init = cu.cuInit(0);
  if (init != 0) {
    *reason =
        init == NO_DEVICE ? "the CUDA driver sees no GPU" : "cuInit failed";
    return 1;
  }
  int count = 0;
  if (cu.cuDeviceGetCount(&count) != 0 || count == 0) {
    *reason = "the CUDA driver sees no GPU";
    return 1;
  }
  return 0;
}

static size_t dtypeBytes(attnc_dtype dtype) {
  switch (dtype) {
  case ATTNC_F32:
  case ATTNC_I32:
    return 4;
  case ATTNC_I64:
    return 8;
  case ATTNC_F8E4M3:
  case ATTNC_F8E5M2:
    return 1;
  default:
    return 2;
  }
}

/* Device memory of one tensor of the kernel's: `tokens` rows of
 * heads x dim elements (an LSE: heads floats per row). Inputs hold a
 * nonzero 16-bit pattern (bf16 0.0078125) or bytes 0x3c; outputs start as
 * NaN (bytes 0xff), so that the output check sees the kernel's writes. */
static int allocateTensor(const attnc_tensor_spec *spec, int64_t tokens,
                          int isInput, CUdeviceptr *out) {
  size_t elementBytes = dtypeBytes(spec->dtype);
  size_t elements = (size_t)tokens * (size_t)spec->heads *
                    (size_t)(spec->role == ATTNC_ROLE_LSE ? 1 : spec->dim);
  if (spec->role == ATTNC_ROLE_LSE)
    elementBytes = 4;
  if (checkCu(cu.cuMemAlloc_v2(out, elements * elementBytes + 1), "cuMemAlloc"))
    return 1;
  if (isInput && elementBytes == 2)
    return checkCu(cu.cuMemsetD16_v2(*out, 0x3c00, elements), "cuMemsetD16");
  return checkCu(
      cu.cuMemsetD8_v2(*out, isInput ? 0x3c : 0xff, elements * elementBytes),
      "cuMemsetD8");
}

typedef struct Loop {
  /* attnc_run's arguments, or the floor's launch (kernel == NULL). */
  attnc_kernel kernel;
  attnc_plan plan;
  const uint64_t *inputs, *outputs;
  int numInputs, numOutputs;
  CUfunction floor;
  void *floorArgs[1];
  CUstream stream;
} Loop;

/* `calls` launches; 1 on an error. */
static int launches(const Loop *loop, int calls) {
  if (loop->kernel) {
    for (int i = 0; i < calls; ++i) {
      attnc_status status =
          attnc_run(loop->kernel, loop->plan, loop->inputs, loop->numInputs,
                    loop->outputs, loop->numOutputs, NULL, NULL, loop->stream);
      if (status != ATTNC_OK)
        return check(status, "attnc_run");
    }
    return 0;
  }
  for (int i = 0; i < calls; ++i) {
    CUresult result =
        cu.cuLaunchKernel(loop->floor, 1, 1, 1, 32, 1, 1, 0, loop->stream,
                          (void **)loop->floorArgs, NULL);
    if (result != 0)
      return checkCu(result, "cuLaunchKernel");
  }
  return 0;
}

typedef struct Figures {
  double perCall, perCallChunked, perCallSynced; /* microseconds */
} Figures;

/* Medians over `reps` repetitions of `runs` launches: back to back, in
 * chunks of `chunk` with the GPU drained (untimed) between, and back to
 * back with the sync timed. */
static int timeLoop(const Loop *loop, int runs, int reps, int chunk,
                    Figures *figures) {
  double *plain = calloc((size_t)reps, sizeof(double));
  double *chunked = calloc((size_t)reps, sizeof(double));
  double *synced = calloc((size_t)reps, sizeof(double));
  if (!plain || !chunked || !synced)
    return fail("out of memory");
  /* Warm up: first launches load modules and fill caches. */
  if (launches(loop, 200) ||
      checkCu(cu.cuStreamSynchronize(loop->stream), "cuStreamSynchronize"))
    return 1;
  for (int rep = 0; rep < reps; ++rep) {
    double start = now();
    if (launches(loop, runs))
      return 1;
    double launched = now();
    if (checkCu(cu.cuStreamSynchronize(loop->stream), "cuStreamSynchronize"))
      return 1;
    double done = now();
    plain[rep] = 1e6 * (launched - start) / runs;
    synced[rep] = 1e6 * (done - start) / runs;

    double total = 0;
    for (int left = runs; left > 0; left -= chunk) {
      int calls = left < chunk ? left : chunk;
      double chunkStart = now();
      if (launches(loop, calls))
        return 1;
      total += now() - chunkStart;
      if (checkCu(cu.cuStreamSynchronize(loop->stream), "cuStreamSynchronize"))
        return 1;
    }
    chunked[rep] = 1e6 * total / runs;
  }
  figures->perCall = median(plain, reps);
  figures->perCallChunked = median(chunked, reps);
  figures->perCallSynced = median(synced, reps);
  free(plain);
  free(chunked);
  free(synced);
  return 0;
}

/* An empty kernel taking one PARAM_BYTES parameter, as PTX the driver
 * compiles for whatever GPU it has (sm_75: the oldest CUDA 13 targets). */
static const char kFloorPtx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry attnc_floor(.param .align 8 .b8 p[496])\n"
    "{\n"
    "  ret;\n"
    "}\n";

static int parseInt(const char *text, int *out) {
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (!*text || *end || value < 1 || value > 100000000)
    return 1;
  *out = (int)value;
  return 0;
}

int main(int argc, char **argv) {
  int runs = 20000, reps = 5, chunk = 64, queries = 1;
  for (int i = 1; i < argc; ++i) {
    int *target = strcmp(argv[i], "--runs") == 0      ? &runs
                  : strcmp(argv[i], "--reps") == 0    ? &reps
                  : strcmp(argv[i], "--chunk") == 0   ? &chunk
                  : strcmp(argv[i], "--queries") == 0 ? &queries
                                                      : NULL;
    if (!target || i + 1 == argc || parseInt(argv[i + 1], target))
      return fail("usage: attnc-run-cost [--runs N] [--reps R] [--chunk C] "
                  "[--queries Q] (positive numbers)");
    ++i;
  }

  const char *reason = NULL, *detail = NULL;
  if (openDriver(&reason, &detail))
    return skip(reason, detail);
  int device = 0;
  char name[256] = {0};
  CUcontext context = NULL;
  if (checkCu(cu.cuDeviceGet(&device, 0), "cuDeviceGet") ||
      checkCu(cu.cuDeviceGetName(name, sizeof name - 1, device),
              "cuDeviceGetName") ||
      /* libattnc works in device 0's primary context too: it finds this
       * one current. */
      checkCu(cu.cuDevicePrimaryCtxRetain(&context, device),
              "cuDevicePrimaryCtxRetain") ||
      checkCu(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent"))
    return 1;
  printf("device=%s\n", name);

  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  spec.name = "run_cost";
  spec.query_heads = 32;
  spec.kv_heads = 8;
  spec.head_dim = 128;
  spec.dtype = ATTNC_BF16;
  spec.query_layout = ATTNC_DENSE;
  spec.queries_per_request = queries;
  spec.kv_layout = ATTNC_DENSE;
  attnc_variant variant = NULL;
  attnc_kernel kernel = NULL;
  if (check(attnc_variant_from_spec(&spec, &variant), "variant"))
    return 1;
  attnc_status compiled = attnc_kernel_compile(variant, NULL, NULL, &kernel);
  if (compiled == ATTNC_NO_DEVICE)
    return skip("libattnc", attnc_last_error());
  if (check(compiled, "compile"))
    return 1;

  const int batch = 1, kvLen = 512;
  attnc_batch shape;
  memset(&shape, 0, sizeof shape);
  shape.batch = batch;
  shape.max_query_len = queries;
  shape.max_kv_len = kvLen;
  shape.query_tokens = (int64_t)batch * queries;
  attnc_plan plan = NULL;
  if (check(attnc_plan_create(kernel, &shape, &plan), "plan"))
    return 1;
  printf("plan_splits=%d\n", attnc_plan_num_splits(plan, 0));

  int numInputs = attnc_kernel_num_inputs(kernel);
  int numOutputs = attnc_kernel_num_outputs(kernel);
  uint64_t inputs[8], outputs[8];
  if (numInputs > 8 || numOutputs > 8)
    return fail("more tensors than expected");
  for (int i = 0; i < numInputs + numOutputs; ++i) {
    attnc_tensor_spec t;
    int isInput = i < numInputs;
    if (check(isInput ? attnc_kernel_input(kernel, i, &t)
                      : attnc_kernel_output(kernel, i - numInputs, &t),
              "tensor spec"))
      return 1;
    if (t.role == ATTNC_ROLE_BUFFER)
      return fail("the variant has an unexpected buffer input");
    int64_t tokens =
        (int64_t)batch * (t.role == ATTNC_ROLE_KV ? kvLen : queries);
    CUdeviceptr ptr = 0;
    if (allocateTensor(&t, tokens, isInput, &ptr))
      return 1;
    if (isInput)
      inputs[i] = ptr;
    else
      outputs[i - numInputs] = ptr;
  }
  /* The fills ran on the legacy default stream, which a non-blocking
   * stream does not wait for. */
  CUstream stream = NULL;
  if (checkCu(cu.cuStreamSynchronize(NULL), "cuStreamSynchronize") ||
      checkCu(cu.cuStreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */),
              "cuStreamCreate"))
    return 1;

  Loop loop;
  memset(&loop, 0, sizeof loop);
  loop.kernel = kernel;
  loop.plan = plan;
  loop.inputs = inputs;
  loop.outputs = outputs;
  loop.numInputs = numInputs;
  loop.numOutputs = numOutputs;
  loop.stream = stream;

  /* The launches compute: equal keys and values of 0.0078125 give every
   * output element that value (bf16 0x3c00). */
  if (check(attnc_run(kernel, plan, inputs, numInputs, outputs, numOutputs,
                      NULL, NULL, stream),
            "attnc_run") ||
      checkCu(cu.cuStreamSynchronize(stream), "cuStreamSynchronize"))
    return 1;
  uint16_t first = 0;
  if (checkCu(cu.cuMemcpyDtoH_v2(&first, outputs[0], sizeof first),
              "cuMemcpyDtoH"))
    return 1;
  if (first == 0x3c00)
    printf("output_check=ok\n");
  else
    printf("output_check=MISMATCH (bf16 0x%04x, expected 0x3c00)\n",
           (unsigned)first);

  Figures run;
  if (timeLoop(&loop, runs, reps, chunk, &run))
    return 1;
  printf("queries=%d\nkv_len=%d\nruns=%d\nreps=%d\nchunk=%d\n", queries, kvLen,
         runs, reps, chunk);
  printf("run_us_per_call=%.3f\n", run.perCall);
  printf("run_us_per_call_chunked=%.3f\n", run.perCallChunked);
  printf("run_us_per_call_synced=%.3f\n", run.perCallSynced);

  /* The floor: bare launches of an empty kernel with as large a
   * parameter. */
  CUmodule module = NULL;
  Loop floorLoop = loop;
  static unsigned char params[PARAM_BYTES];
  floorLoop.kernel = NULL;
  floorLoop.floorArgs[0] = params;
  if (cu.cuModuleLoadData(&module, kFloorPtx) != 0 ||
      cu.cuModuleGetFunction(&floorLoop.floor, module, "attnc_floor") != 0) {
    printf("launch_us_per_call=skipped (the driver cannot load the floor's "
           "PTX)\n");
    return 0;
  }
  Figures bare;
  if (timeLoop(&floorLoop, runs, reps, chunk, &bare))
    return 1;
  printf("launch_us_per_call=%.3f\n", bare.perCall);
  printf("launch_us_per_call_chunked=%.3f\n", bare.perCallChunked);
  printf("launch_us_per_call_synced=%.3f\n", bare.perCallSynced);
  printf("run_overhead_us=%.3f\n", run.perCallChunked - bare.perCallChunked);
  attnc_plan_destroy(plan);
  attnc_kernel_destroy(kernel);
  attnc_variant_destroy(variant);
  return 0;
}
