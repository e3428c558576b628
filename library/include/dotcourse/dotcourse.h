/* dotcourse.h — the course's dot product as a C library (chapter 07).
 *
 * The whole public interface: an opaque context, functions that return a status code, a message
 * for every status and for the last error of the calling thread, and the library's version.
 * Only the functions below are exported from libdotcourse.so; no C++ exception crosses them.
 *
 * Threads: a context may be used from several threads; its calls are serialized by a lock inside
 * it (each call runs alone on the context's GPU buffers). Threads that want to run at the same
 * time create one context each. dotcourse_last_error() is per thread.
 *
 * Lifetime: create once with the largest n you will pass (n_max), call dot as often as you like,
 * destroy once. A destroyed handle is detected (DOTCOURSE_ERROR_INVALID_HANDLE) unless its memory
 * was reused for a new context in the meantime: do not use a handle after destroying it.
 */
#ifndef DOTCOURSE_H
#define DOTCOURSE_H

#include <stddef.h>

#if defined(_WIN32)
#  if defined(DOTCOURSE_BUILDING)
#    define DOTCOURSE_API __declspec(dllexport)
#  else
#    define DOTCOURSE_API __declspec(dllimport)
#  endif
#else
#  define DOTCOURSE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

// [status]
/** What every function returns. */
typedef enum dotcourse_status {
  DOTCOURSE_OK = 0,
  DOTCOURSE_ERROR_INVALID_ARGUMENT = 1, /**< a null pointer, or a value out of range */
  DOTCOURSE_ERROR_TOO_LARGE = 2,        /**< n is larger than the context's n_max (a build that refuses) */
  DOTCOURSE_ERROR_INVALID_HANDLE = 3,   /**< null, never created, or already destroyed */
  DOTCOURSE_ERROR_NO_GPU = 4,           /**< no usable CUDA device (or no such device id) */
  DOTCOURSE_ERROR_OUT_OF_MEMORY = 5,    /**< the device (or pinned host memory) is full */
  DOTCOURSE_ERROR_CUDA = 6,             /**< any other CUDA error; see dotcourse_last_error() */
  DOTCOURSE_ERROR_INTERNAL = 7          /**< a bug in the library; please report it */
} dotcourse_status;
// [status]

/** Opaque: everything one GPU needs for dot products up to n_max elements. */
typedef struct dotcourse_context dotcourse_context;

/** The library's version, "MAJOR.MINOR.PATCH" (a static string): the CMake project's version, the
 *  same as the CMake package's, dotcourse.pc's and the Python package's __version__. */
DOTCOURSE_API const char* dotcourse_version(void);

/** A static, one-line description of a status code. */
DOTCOURSE_API const char* dotcourse_status_string(dotcourse_status status);

/** The message of the last failing call on this thread (with the details: sizes, CUDA error);
 *  "" when the last call succeeded. Valid until the thread's next dotcourse call. */
DOTCOURSE_API const char* dotcourse_last_error(void);

/** Creates a context on `device` for vectors of up to `n_max` floats (n_max >= 1): device buffers
 *  and pinned staging memory are allocated here, once. On failure *out is set to NULL. */
DOTCOURSE_API dotcourse_status dotcourse_create(int device, size_t n_max, dotcourse_context** out);

/** Destroys the context. NULL is accepted and does nothing. Safe while other threads are in calls on
 *  it: a call already running finishes and holds the context until it returns (the context is freed
 *  then), a call that starts after destroy gets DOTCOURSE_ERROR_INVALID_HANDLE. */
DOTCOURSE_API dotcourse_status dotcourse_destroy(dotcourse_context* ctx);

/** The largest n the context is planned for: n_max as created, or more after a call past it grew
 *  the plan (n > n_max is chapter 07's exercise 3: this build refuses it or grows, see below). */
DOTCOURSE_API dotcourse_status dotcourse_n_max(const dotcourse_context* ctx, size_t* n_max);

/** *result = x·y for two host arrays of n floats (any host memory: pageable or pinned). Copies
 *  included; returns when the result is on the host. n = 0 gives 0. Uses the fastest version;
 *  arrays inside ranges registered with dotcourse_host_register are copied without staging. Always
 *  the GPU (dotcourse_dot_ex chooses), except on a context of dotcourse_create_cpu: the CPU.
 *  n > n_max: DOTCOURSE_ERROR_TOO_LARGE where the build refuses (the course's does), or the plan
 *  grows to hold n and the dot is computed where it grows (chapter 07's exercise 3 decides). */
DOTCOURSE_API dotcourse_status dotcourse_dot(dotcourse_context* ctx, const float* x, const float* y, size_t n,
                                             float* result);

/** Pins the host memory [p, p + bytes) for this context (cudaHostRegister): dotcourse_dot then
 *  copies an array that lies inside it straight to the GPU at the pinned rate, without staging.
 *  Registering costs far more than one copy: it pays for memory passed in many calls. The caller
 *  keeps the memory allocated (its values may change) until dotcourse_host_unregister(ctx, p) or
 *  dotcourse_destroy(ctx), which unregister it. A range that overlaps one registered before, or
 *  shares a page with memory registered elsewhere, is refused (DOTCOURSE_ERROR_INVALID_ARGUMENT);
 *  dotcourse_dot still works on it, staged. */
DOTCOURSE_API dotcourse_status dotcourse_host_register(dotcourse_context* ctx, const void* p, size_t bytes);

/** Undoes dotcourse_host_register(ctx, p, ...): p is the pointer that was registered. */
DOTCOURSE_API dotcourse_status dotcourse_host_unregister(dotcourse_context* ctx, const void* p);

/** *result = x·y for two arrays of n floats in the context's device memory, computed on the
 *  caller's `stream` (a cudaStream_t; NULL is the legacy default stream). The kernel waits for
 *  whatever the caller enqueued on `stream` before it (the producer of x and y); the call
 *  returns when the result is on the host. No copy of x or y is made, so n is not limited by
 *  n_max. x and y must be device memory of the context's device. n = 0 gives 0. */
DOTCOURSE_API dotcourse_status dotcourse_dot_device(dotcourse_context* ctx, const float* d_x, const float* d_y,
                                                    size_t n, void* stream, float* result);

/* ---- Any two element types (chapter 10) ------------------------------------------------------- */

/** Element types of dotcourse_dot_typed (NumPy's names). INT64 is only ever an accumulator. */
typedef enum dotcourse_dtype {
  DOTCOURSE_FLOAT32 = 0,
  DOTCOURSE_FLOAT64 = 1,
  DOTCOURSE_FLOAT16 = 2,
  DOTCOURSE_BFLOAT16 = 3,
  DOTCOURSE_INT8 = 4,
  DOTCOURSE_BOOL = 5, /**< one byte per element, 0 or 1 */
  DOTCOURSE_INT64 = 6
} dotcourse_dtype;

/** The accumulator of the pair (x_dtype, y_dtype): two integer types give INT64 (the dot is exact);
 *  a FLOAT64 input gives FLOAT64; anything else FLOAT32 (float16, bfloat16, int8 and bool are
 *  exactly float32 values). INVALID_ARGUMENT for an unknown dtype or INT64 as an input. */
DOTCOURSE_API dotcourse_status dotcourse_accumulator(dotcourse_dtype x_dtype, dotcourse_dtype y_dtype,
                                                     dotcourse_dtype* acc);

/** *result = x·y for two arrays of n elements of any two dtypes in the context's device memory, on
 *  the caller's `stream` (as dotcourse_dot_device): each read at its own width, accumulated in
 *  dotcourse_accumulator's type; returns when the result is on the host. The result is a double:
 *  the accumulator's value exactly (integer pairs are exact while |x·y| < 2^53, i.e. for every
 *  int8 pair up to n = 2^39). Each pointer must be aligned to its element size. n is not limited by
 *  n_max. n = 0 gives 0. Deterministic: the same inputs give the same bits. */
DOTCOURSE_API dotcourse_status dotcourse_dot_typed(dotcourse_context* ctx, const void* d_x, dotcourse_dtype x_dtype,
                                                   const void* d_y, dotcourse_dtype y_dtype, size_t n, void* stream,
                                                   double* result);

/** The same for two host arrays: copied to the device first (device buffers grown on demand and
 *  kept by the context), on the context's own stream. On a context without a GPU
 *  (dotcourse_create_cpu): computed by the CPU's threads instead, with the same accumulator. */
DOTCOURSE_API dotcourse_status dotcourse_dot_typed_host(dotcourse_context* ctx, const void* x, dotcourse_dtype x_dtype,
                                                        const void* y, dotcourse_dtype y_dtype, size_t n,
                                                        double* result);

/* ---- Host arrays on the fastest path: the CPU, the GPU, or both (issue 26) -------------------- */

/** Where dotcourse_dot_ex computes a dot of two host arrays. */
typedef enum dotcourse_where {
  DOTCOURSE_WHERE_AUTO = 0, /**< the context's plan (dotcourse_plan_choose): measured or the built-in rule */
  DOTCOURSE_WHERE_CPU = 1,  /**< the course's threaded CPU dot (needs no GPU; n not limited by n_max) */
  DOTCOURSE_WHERE_GPU = 2   /**< the GPU, as dotcourse_dot (registered arrays direct, others staged) */
} dotcourse_where;

/** The path a dot took (or a plan chooses). */
typedef enum dotcourse_path {
  DOTCOURSE_PATH_CPU = 1,  /**< all n on the CPU's threads */
  DOTCOURSE_PATH_GPU = 2,  /**< all n copied to the GPU */
  DOTCOURSE_PATH_SPLIT = 3 /**< both at once: the first n_gpu elements on the GPU, the rest on the CPU */
} dotcourse_path;

/** Options of dotcourse_dot_ex. Set `size` to sizeof(dotcourse_options): the struct may grow, and a
 *  library reads only the fields the caller's size covers (missing ones take their defaults). */
typedef struct dotcourse_options {
  size_t size;
  dotcourse_where where; /**< default DOTCOURSE_WHERE_AUTO */
} dotcourse_options;

/** What a dotcourse_dot_ex call did. Set `size` to sizeof(dotcourse_report); the library fills the
 *  fields the size covers. */
typedef struct dotcourse_report {
  size_t size;
  dotcourse_path path;  /**< the path taken */
  size_t n_cpu;         /**< elements summed on the CPU */
  size_t n_gpu;         /**< elements summed on the GPU (n_cpu + n_gpu = n) */
  unsigned cpu_threads; /**< threads of the CPU dot (0 when the CPU took no part) */
  int registered;       /**< 1: x and y both lie in ranges registered with dotcourse_host_register */
  int calibrated;       /**< 1: an AUTO choice from a measured plan; 0: from the built-in rule, or forced */
  double seconds;       /**< wall time inside the library, from entry to result */
} dotcourse_report;

/** Rows a plan holds at most. */
#define DOTCOURSE_PLAN_ROWS 32

/** One row of a plan: from n_min elements on (until the next row of the same `registered`), take
 *  `path`; a SPLIT sends the share gpu_share (0 < gpu_share < 1) of the elements to the GPU. */
typedef struct dotcourse_plan_row {
  size_t n_min;
  int registered; /**< 0: rows for staged arrays; 1: for arrays in registered ranges */
  dotcourse_path path;
  double gpu_share;
} dotcourse_plan_row;

/** The measured crossovers of one host and device (dotcourse_calibrate), or the built-in rule (the
 *  CPU at every size). Kept by the context; a caller may save it and give it back with
 *  dotcourse_set_plan (the Python package caches it per host and device). */
typedef struct dotcourse_plan {
  size_t size;               /**< sizeof(dotcourse_plan) */
  int calibrated;            /**< 1: measured by dotcourse_calibrate (or set from one) */
  unsigned cpu_threads;      /**< the context's CPU dot threads (dotcourse_set_plan keeps the context's) */
  char device[96];           /**< the context's GPU, by name ("" for a CPU-only context; set_plan keeps it) */
  size_t rows;               /**< rows used, at most DOTCOURSE_PLAN_ROWS, ascending n_min per `registered` */
  dotcourse_plan_row row[DOTCOURSE_PLAN_ROWS];
} dotcourse_plan;

/** Creates a context without a GPU: dotcourse_dot, dotcourse_dot_ex and dotcourse_dot_typed_host
 *  compute on the CPU (any n; dotcourse_n_max gives SIZE_MAX), every GPU function returns
 *  DOTCOURSE_ERROR_NO_GPU. `threads`: the CPU dot's threads (0: $DOTCOURSE_CPU_THREADS, else one per
 *  hardware thread). */
DOTCOURSE_API dotcourse_status dotcourse_create_cpu(unsigned threads, dotcourse_context** out);

/** *result = x·y for two host arrays of n floats, on the path opts->where asks for (opts NULL:
 *  AUTO). AUTO takes the context's plan for n and whether both arrays lie in registered ranges;
 *  GPU is dotcourse_dot's path; CPU the threaded CPU dot (double per thread, the threads' partials
 *  added in order: the same inputs give the same bits). n > n_max is as dotcourse_dot says
 *  (except for CPU, which has no n_max). `report` (may be NULL) says what was done. dotcourse_dot is this with GPU (or,
 *  on a CPU-only context, CPU). */
DOTCOURSE_API dotcourse_status dotcourse_dot_ex(dotcourse_context* ctx, const float* x, const float* y, size_t n,
                                                const dotcourse_options* opts, float* result,
                                                dotcourse_report* report);

/** The plan's choice for n elements (registered: both arrays in registered ranges): the row of that
 *  `registered` with the largest n_min <= n, the CPU when there is none. Pure: needs no context and
 *  no GPU. *n_gpu: elements for the GPU (0 for CPU, n for GPU). */
DOTCOURSE_API dotcourse_status dotcourse_plan_choose(const dotcourse_plan* plan, size_t n, int registered,
                                                     dotcourse_path* path, size_t* n_gpu);

/** Copies the context's plan into *plan (plan->size must be sizeof(dotcourse_plan)). */
DOTCOURSE_API dotcourse_status dotcourse_get_plan(const dotcourse_context* ctx, dotcourse_plan* plan);

/** Replaces the context's plan: its rows and `calibrated` (checked: INVALID_ARGUMENT for rows out of
 *  order or out of range); `device` and `cpu_threads` stay the context's. A caller that saved a plan
 *  compares them with dotcourse_get_plan's before giving it back. */
DOTCOURSE_API dotcourse_status dotcourse_set_plan(dotcourse_context* ctx, const dotcourse_plan* plan);

/** Measures the crossovers on this host and the context's GPU, with buffers of its own (staged and
 *  registered) up to min(n_limit, n_max, 2^26) elements (about a second at 2^26), and makes the result
 *  the context's plan; copies it into *plan when plan is not NULL. NO_GPU on a CPU-only context. */
DOTCOURSE_API dotcourse_status dotcourse_calibrate(dotcourse_context* ctx, size_t n_limit, dotcourse_plan* plan);

#ifdef __cplusplus
}
#endif

#endif /* DOTCOURSE_H */
