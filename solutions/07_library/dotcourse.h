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
  DOTCOURSE_ERROR_TOO_LARGE = 2,        /**< n is larger than the context's n_max */
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

/** The n_max the context was created with. */
DOTCOURSE_API dotcourse_status dotcourse_n_max(const dotcourse_context* ctx, size_t* n_max);

/** *result = x·y for two host arrays of n floats (any host memory: pageable or pinned). Copies
 *  included; returns when the result is on the host. n = 0 gives 0. Uses the fastest version;
 *  arrays inside ranges registered with dotcourse_host_register are copied without staging. */
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
 *  kept by the context), on the context's own stream. */
DOTCOURSE_API dotcourse_status dotcourse_dot_typed_host(dotcourse_context* ctx, const void* x, dotcourse_dtype x_dtype,
                                                        const void* y, dotcourse_dtype y_dtype, size_t n,
                                                        double* result);

#ifdef __cplusplus
}
#endif

#endif /* DOTCOURSE_H */
