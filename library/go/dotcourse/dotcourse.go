// Package dotcourse calls the course's GPU dot product (libdotcourse.so, chapter 07) from Go.
//
//	ctx, err := dotcourse.New(0, 1<<20) // device 0, vectors of up to 2^20 float32
//	if err != nil { ... }
//	defer ctx.Close()
//	r, err := ctx.Dot(x, y)             // x, y []float32 of equal length
//
// Errors are *dotcourse.Error values; compare them with errors.Is(err, dotcourse.ErrTooLarge) and
// the other Err* sentinels. A Context may be shared by goroutines: the library serializes the calls
// on one context; goroutines that should run at the same time use one Context each.
//
// cgo's pointer rules, and why this package follows them: Dot passes &x[0] and &y[0] to C. That is
// allowed because a []float32 holds no Go pointers, and only for the duration of the call: the
// garbage collector may move or free the memory afterwards. The C library therefore must not keep
// the pointers, and it does not: its staging threads have read every element before dotcourse_dot
// returns. Nothing else crosses: the context is C memory that Go only holds the address of.
//
// Building: the package finds dotcourse/dotcourse.h and libdotcourse.so through pkg-config (dotcourse.pc,
// installed by `cmake --install`, or written into a build's lib/pkgconfig/). When `go build` says
// "Package dotcourse was not found in the pkg-config search path", point PKG_CONFIG_PATH at the
// folder holding dotcourse.pc, for example
//
//	PKG_CONFIG_PATH=$PWD/build/solutions/lib/pkgconfig go build ./...
//
// and see README.md beside go.mod for the run-time side (the loader must find libdotcourse.so).
package dotcourse

/*
#cgo pkg-config: dotcourse
#include <stdio.h>
#include "dotcourse/dotcourse.h"

// The library keeps the last error's message per OS thread, and a goroutine may move to another
// thread between two cgo calls: so the message is fetched in the same C call as the failure.
static int dc_keep_message(int status, char* msg, size_t cap) {
  if (status != DOTCOURSE_OK) snprintf(msg, cap, "%s", dotcourse_last_error());
  return status;
}
static int dc_create(int device, size_t n_max, dotcourse_context** out, char* msg, size_t cap) {
  return dc_keep_message(dotcourse_create(device, n_max, out), msg, cap);
}
static int dc_destroy(dotcourse_context* ctx, char* msg, size_t cap) {
  return dc_keep_message(dotcourse_destroy(ctx), msg, cap);
}
static int dc_dot(dotcourse_context* ctx, const float* x, const float* y, size_t n, float* r, char* msg, size_t cap) {
  return dc_keep_message(dotcourse_dot(ctx, x, y, n, r), msg, cap);
}
static int dc_create_cpu(unsigned threads, dotcourse_context** out, char* msg, size_t cap) {
  return dc_keep_message(dotcourse_create_cpu(threads, out), msg, cap);
}
static int dc_dot_ex(dotcourse_context* ctx, const float* x, const float* y, size_t n, int where, float* r,
                     dotcourse_report* report, char* msg, size_t cap) {
  dotcourse_options opts = {sizeof(dotcourse_options), (dotcourse_where)where};
  report->size = sizeof(dotcourse_report);
  return dc_keep_message(dotcourse_dot_ex(ctx, x, y, n, &opts, r, report), msg, cap);
}
static int dc_calibrate(dotcourse_context* ctx, size_t n_limit, char* msg, size_t cap) {
  return dc_keep_message(dotcourse_calibrate(ctx, n_limit, NULL), msg, cap);
}
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// Status is the library's status code (dotcourse_status).
type Status int

// The codes of dotcourse.h.
const (
	OK              Status = C.DOTCOURSE_OK
	InvalidArgument Status = C.DOTCOURSE_ERROR_INVALID_ARGUMENT
	TooLarge        Status = C.DOTCOURSE_ERROR_TOO_LARGE
	InvalidHandle   Status = C.DOTCOURSE_ERROR_INVALID_HANDLE
	NoGPU           Status = C.DOTCOURSE_ERROR_NO_GPU
	OutOfMemory     Status = C.DOTCOURSE_ERROR_OUT_OF_MEMORY
	CUDA            Status = C.DOTCOURSE_ERROR_CUDA
	Internal        Status = C.DOTCOURSE_ERROR_INTERNAL
)

// String is the library's one-line description of the status.
func (s Status) String() string { return C.GoString(C.dotcourse_status_string(C.dotcourse_status(s))) }

// Error is a failed call: the status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "dotcourse: " + e.Message }

// Is makes errors.Is(err, ErrTooLarge) and the like work: errors with the same status match.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && t.Message == ""
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: InvalidArgument}
	ErrTooLarge        = &Error{Status: TooLarge}
	ErrInvalidHandle   = &Error{Status: InvalidHandle}
	ErrNoGPU           = &Error{Status: NoGPU}
	ErrOutOfMemory     = &Error{Status: OutOfMemory}
	ErrCUDA            = &Error{Status: CUDA}
)

const msgCap = 1024

func check(status C.int, msg *[msgCap]C.char) error {
	if Status(status) == OK {
		return nil
	}
	return &Error{Status: Status(status), Message: C.GoString(&msg[0])}
}

// Version is the library's version.
func Version() string { return C.GoString(C.dotcourse_version()) }

// Context is one GPU context of the library, for vectors of up to NMax elements. Close it.
type Context struct {
	// Read-held for the whole of every call, so Close (which write-holds it) waits for the calls in
	// flight and no call starts with a handle Close is destroying. The library locks the calls
	// themselves against each other; this lock only orders them against Close.
	mu   sync.RWMutex
	ptr  *C.dotcourse_context
	nMax int
}

// New creates a context on `device` for vectors of up to nMax float32 (device memory and pinned
// staging buffers are allocated now, once).
func New(device int, nMax int) (*Context, error) {
	if nMax < 1 {
		return nil, &Error{Status: InvalidArgument, Message: fmt.Sprintf("nMax must be at least 1 (got %d)", nMax)}
	}
	var msg [msgCap]C.char
	var ptr *C.dotcourse_context
	if err := check(C.dc_create(C.int(device), C.size_t(nMax), &ptr, &msg[0], msgCap), &msg); err != nil {
		return nil, err
	}
	return &Context{ptr: ptr, nMax: nMax}, nil
}

// NMax is the largest n the context accepts.
func (c *Context) NMax() int { return c.nMax }

// Close destroys the context, after the calls already running on it return; calls made after it
// get ErrInvalidHandle. Closing twice is not an error.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return nil
	}
	var msg [msgCap]C.char
	err := check(C.dc_destroy(c.ptr, &msg[0], msgCap), &msg)
	c.ptr = nil
	return err
}

// Dot returns x·y, computed on the GPU (the copies included). The slices must have equal
// lengths, at most NMax(); empty slices give 0.
func (c *Context) Dot(x, y []float32) (float32, error) {
	if len(x) != len(y) {
		return 0, &Error{Status: InvalidArgument,
			Message: fmt.Sprintf("x has %d elements and y has %d: a dot product needs equal lengths", len(x), len(y))}
	}
	c.mu.RLock()
	defer c.mu.RUnlock() // held across the C call: Close cannot destroy ptr under it
	ptr := c.ptr
	if ptr == nil {
		return 0, &Error{Status: InvalidHandle, Message: "the context is closed"}
	}
	var xp, yp *C.float
	if len(x) > 0 {
		// Go memory without Go pointers, passed for the duration of the call only (see the package doc).
		xp = (*C.float)(unsafe.Pointer(&x[0]))
		yp = (*C.float)(unsafe.Pointer(&y[0]))
	}
	var result C.float
	var msg [msgCap]C.char
	if err := check(C.dc_dot(ptr, xp, yp, C.size_t(len(x)), &result, &msg[0], msgCap), &msg); err != nil {
		return 0, err
	}
	return float32(result), nil
}

// Where says where DotWhere computes a dot of two host slices (dotcourse_where).
type Where int

// The places of dotcourse.h.
const (
	Auto Where = C.DOTCOURSE_WHERE_AUTO // the context's plan: measured by Calibrate, else the CPU
	CPU  Where = C.DOTCOURSE_WHERE_CPU  // the library's threaded CPU dot (no GPU needed, no NMax limit)
	GPU  Where = C.DOTCOURSE_WHERE_GPU  // the GPU, as Dot
)

// Report is what a DotWhere call did (dotcourse_report).
type Report struct {
	Path       string  // "cpu", "gpu" or "split" (both at once on two parts)
	NCPU, NGPU int     // elements summed on the CPU and on the GPU
	CPUThreads int     // threads of the CPU dot (0 when the CPU took no part)
	Registered bool    // both slices lay in ranges registered with the library
	Calibrated bool    // an Auto choice from a measured plan
	Seconds    float64 // wall time inside the library
}

// NewCPU creates a context without a GPU: Dot and DotWhere compute on the CPU with `threads`
// threads (0: $DOTCOURSE_CPU_THREADS, else one per hardware thread), for any n; GPU calls get
// ErrNoGPU.
func NewCPU(threads int) (*Context, error) {
	if threads < 0 || threads > 1024 {
		return nil, &Error{Status: InvalidArgument, Message: fmt.Sprintf("threads must be between 0 and 1024 (got %d)", threads)}
	}
	var msg [msgCap]C.char
	var ptr *C.dotcourse_context
	if err := check(C.dc_create_cpu(C.uint(threads), &ptr, &msg[0], msgCap), &msg); err != nil {
		return nil, err
	}
	return &Context{ptr: ptr, nMax: math.MaxInt}, nil
}

// DotWhere returns x·y computed where `where` says (Auto: the context's plan), and what was done.
// Errors as Dot; where GPU on a CPU-only context is ErrNoGPU, an unknown where ErrInvalidArgument.
func (c *Context) DotWhere(x, y []float32, where Where) (float32, Report, error) {
	if len(x) != len(y) {
		return 0, Report{}, &Error{Status: InvalidArgument,
			Message: fmt.Sprintf("x has %d elements and y has %d: a dot product needs equal lengths", len(x), len(y))}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	ptr := c.ptr
	if ptr == nil {
		return 0, Report{}, &Error{Status: InvalidHandle, Message: "the context is closed"}
	}
	var xp, yp *C.float
	if len(x) > 0 {
		xp = (*C.float)(unsafe.Pointer(&x[0])) // as in Dot: for the duration of the call only
		yp = (*C.float)(unsafe.Pointer(&y[0]))
	}
	var result C.float
	var r C.dotcourse_report
	var msg [msgCap]C.char
	if err := check(C.dc_dot_ex(ptr, xp, yp, C.size_t(len(x)), C.int(where), &result, &r, &msg[0], msgCap), &msg); err != nil {
		return 0, Report{}, err
	}
	paths := map[C.dotcourse_path]string{C.DOTCOURSE_PATH_CPU: "cpu", C.DOTCOURSE_PATH_GPU: "gpu", C.DOTCOURSE_PATH_SPLIT: "split"}
	return float32(result), Report{Path: paths[r.path], NCPU: int(r.n_cpu), NGPU: int(r.n_gpu),
		CPUThreads: int(r.cpu_threads), Registered: r.registered != 0, Calibrated: r.calibrated != 0,
		Seconds: float64(r.seconds)}, nil
}

// Calibrate measures where a host dot finishes soonest on this host and GPU, up to nLimit elements
// (at least 4096; capped at NMax and 2^26), and makes it the context's plan for Auto.
func (c *Context) Calibrate(nLimit int) error {
	if nLimit < 0 {
		return &Error{Status: InvalidArgument, Message: fmt.Sprintf("nLimit must not be negative (got %d)", nLimit)}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return &Error{Status: InvalidHandle, Message: "the context is closed"}
	}
	var msg [msgCap]C.char
	return check(C.dc_calibrate(c.ptr, C.size_t(nLimit), &msg[0], msgCap), &msg)
}
