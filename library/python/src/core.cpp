// dotcourse._core: the Python package's compiled extension (nanobind) over libdotcourse's C API.
//
// The package's hot call, Context.dot of two float32 NumPy vectors, runs here from end to end: the
// arrays are read through NumPy's C API (their fields: no buffer export per call), the checks are C
// comparisons, and the C library's
// dotcourse_dot_ex computes (for small n on the calling thread, with the library's vectorised CPU
// dot). Everything else (other producers and dtypes, the registration cache, the plan's cache
// file) stays in Python, reached only when the fast path does not apply.
//
// The C library is opened at run time (dlopen of the path the package chooses: the wheel's own
// libdotcourse.so, DOTCOURSE_LIB, or a course build's), so one extension serves a wheel and every
// build of the course, the student's included, and the C ABI stays the one boundary.

#include <dlfcn.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

// NumPy's C API, imported on the first dot (import_numpy below), not when the module loads.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL dotcourse_core_ARRAY_API
#include <numpy/arrayobject.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dotcourse/dotcourse.h"

namespace nb = nanobind;

namespace {

// ---- the C library, opened once -------------------------------------------------------------------

struct Api {
  decltype(&dotcourse_version) version = nullptr;
  decltype(&dotcourse_status_string) status_string = nullptr;
  decltype(&dotcourse_last_error) last_error = nullptr;
  decltype(&dotcourse_create) create = nullptr;
  decltype(&dotcourse_create_cpu) create_cpu = nullptr;
  decltype(&dotcourse_destroy) destroy = nullptr;
  decltype(&dotcourse_dot) dot = nullptr;
  decltype(&dotcourse_dot_ex) dot_ex = nullptr;
  decltype(&dotcourse_host_register) host_register = nullptr;
  decltype(&dotcourse_host_unregister) host_unregister = nullptr;
  decltype(&dotcourse_dot_device) dot_device = nullptr;
  decltype(&dotcourse_accumulator) accumulator = nullptr;
  decltype(&dotcourse_dot_typed) dot_typed = nullptr;
  decltype(&dotcourse_dot_typed_host) dot_typed_host = nullptr;
  decltype(&dotcourse_plan_choose) plan_choose = nullptr;
  decltype(&dotcourse_get_plan) get_plan = nullptr;
  decltype(&dotcourse_set_plan) set_plan = nullptr;
  decltype(&dotcourse_calibrate) calibrate = nullptr;
};

Api api;
void* g_library = nullptr;
std::string g_path;

template <class F>
void resolve(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) throw std::runtime_error(std::string("the library lacks ") + name);
}

// Opens the library at `path` (once per process; a second path is refused: the contexts of one
// process share one library).
void open_library(const std::string& path) {
  if (g_library != nullptr) {
    if (path == g_path) return;
    PyErr_SetString(PyExc_OSError, ("dotcourse already uses " + g_path + "; cannot switch to " + path).c_str());
    throw nb::python_error();
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    PyErr_SetString(PyExc_OSError, (path + " could not be loaded: " + (why ? why : "?")).c_str());
    throw nb::python_error();
  }
  Api a;
  try {
    resolve(lib, a.version, "dotcourse_version");
    resolve(lib, a.status_string, "dotcourse_status_string");
    resolve(lib, a.last_error, "dotcourse_last_error");
    resolve(lib, a.create, "dotcourse_create");
    resolve(lib, a.create_cpu, "dotcourse_create_cpu");
    resolve(lib, a.destroy, "dotcourse_destroy");
    resolve(lib, a.dot, "dotcourse_dot");
    resolve(lib, a.dot_ex, "dotcourse_dot_ex");
    resolve(lib, a.host_register, "dotcourse_host_register");
    resolve(lib, a.host_unregister, "dotcourse_host_unregister");
    resolve(lib, a.dot_device, "dotcourse_dot_device");
    resolve(lib, a.accumulator, "dotcourse_accumulator");
    resolve(lib, a.dot_typed, "dotcourse_dot_typed");
    resolve(lib, a.dot_typed_host, "dotcourse_dot_typed_host");
    resolve(lib, a.plan_choose, "dotcourse_plan_choose");
    resolve(lib, a.get_plan, "dotcourse_get_plan");
    resolve(lib, a.set_plan, "dotcourse_set_plan");
    resolve(lib, a.calibrate, "dotcourse_calibrate");
  } catch (const std::runtime_error& e) {
    dlclose(lib);
    PyErr_SetString(PyExc_OSError, (path + ": " + e.what() + " (not a libdotcourse of this version)").c_str());
    throw nb::python_error();
  }
  api = a;
  g_library = lib;
  g_path = path;
}

void need_library() {
  if (g_library == nullptr) {
    PyErr_SetString(PyExc_OSError, "dotcourse._core: the library is not open (dotcourse._lib.load() opens it)");
    throw nb::python_error();
  }
}

// ---- errors: the package's exception classes (dotcourse._errors) ------------------------------------

nb::handle errors_module() {
  static PyObject* m = nullptr;  // a reference kept for good: no destructor runs after the interpreter's end
  if (m == nullptr) m = nb::module_::import_("dotcourse._errors").release().ptr();
  return m;
}

[[noreturn]] void raise(nb::object exception) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
  throw nb::python_error();
}

// The status's DotcourseError subclass with the library's message for this thread's failed call.
[[noreturn]] void raise_status(int status) {
  const char* message = api.last_error != nullptr ? api.last_error() : "";
  std::string text = message != nullptr && *message ? message : api.status_string(static_cast<dotcourse_status>(status));
  raise(errors_module().attr("error_for")(status, text));
}

void check(dotcourse_status status) {
  if (status != DOTCOURSE_OK) raise_status(status);
}

// ---- plans -----------------------------------------------------------------------------------------

using Row = std::tuple<std::size_t, bool, int, double>;  // n_min, registered, path code, gpu_share
using PlanTuple = std::tuple<bool, unsigned, std::string, std::vector<Row>>;

dotcourse_plan plan_from(const std::vector<Row>& rows, bool calibrated) {
  dotcourse_plan plan{};
  plan.size = sizeof plan;
  if (rows.size() > DOTCOURSE_PLAN_ROWS) throw nb::value_error("a plan holds at most 32 rows");
  plan.rows = rows.size();
  plan.calibrated = calibrated ? 1 : 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    plan.row[i].n_min = std::get<0>(rows[i]);
    plan.row[i].registered = std::get<1>(rows[i]) ? 1 : 0;
    plan.row[i].path = static_cast<dotcourse_path>(std::get<2>(rows[i]));
    plan.row[i].gpu_share = std::get<3>(rows[i]);
  }
  return plan;
}

PlanTuple plan_tuple(const dotcourse_plan& plan) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < plan.rows && i < DOTCOURSE_PLAN_ROWS; ++i)
    rows.emplace_back(plan.row[i].n_min, plan.row[i].registered != 0, static_cast<int>(plan.row[i].path),
                      plan.row[i].gpu_share);
  const std::size_t len = strnlen(plan.device, sizeof plan.device);
  return {plan.calibrated != 0, plan.cpu_threads, std::string(plan.device, len), rows};
}

// ---- the fast path's pieces ------------------------------------------------------------------------

bool g_numpy = false;           // NumPy's C API imported (on the first dot)
PyObject* g_np_dot = nullptr;   // numpy.dot (a strong reference: looked up once, not per call)
PyObject* g_auto = nullptr;     // the interned "auto", "cpu", "gpu"
PyObject* g_cpu = nullptr;
PyObject* g_gpu = nullptr;

constexpr std::size_t kPinMin = std::size_t{1} << 20;     // bytes: the registration cache's floor (_pins.PIN_MIN)
constexpr std::size_t kReleaseGil = std::size_t{1} << 14;  // below this n the call is shorter than a GIL switch

int where_code(PyObject* where) {
  if (where == g_auto) return 0;
  if (where == g_cpu) return 1;
  if (where == g_gpu) return 2;
  if (PyUnicode_Check(where)) {
    if (PyUnicode_CompareWithASCIIString(where, "auto") == 0) return 0;
    if (PyUnicode_CompareWithASCIIString(where, "cpu") == 0) return 1;
    if (PyUnicode_CompareWithASCIIString(where, "gpu") == 0) return 2;
  }
  nb::object text = nb::steal(PyObject_Repr(where));
  if (!text.is_valid()) throw nb::python_error();
  PyErr_Format(PyExc_ValueError, "where must be 'auto', 'cpu' or 'gpu', not %U", text.ptr());
  throw nb::python_error();
}

void import_numpy() {
  if (_import_array() < 0) throw nb::python_error();  // numpy._core.multiarray's C API table
  g_np_dot = nb::object(nb::module_::import_("numpy").attr("dot")).release().ptr();
  g_numpy = true;
}

// A float32 NumPy vector, read from the array's own fields: exactly numpy.ndarray (a subclass may
// override anything: the slow path takes it), 1-D, native-order float32, C-contiguous. The buffer
// protocol answered the same question, but NumPy builds a format string for every array it exports
// (a new one per call for fresh arrays), a noticeable part of a call at small n.
bool numpy_float_vector(PyObject* a) {
  if (Py_TYPE(a) != &PyArray_Type) return false;
  PyArrayObject* arr = reinterpret_cast<PyArrayObject*>(a);
  return PyArray_NDIM(arr) == 1 && PyArray_TYPE(arr) == NPY_FLOAT && PyArray_ISNOTSWAPPED(arr) &&
         PyArray_IS_C_CONTIGUOUS(arr);
}

// A float32 vector's buffer: 1-D, C-contiguous, native float. False (and no error set) otherwise.
// Held while the GIL is released, so that no other thread can resize the array under the call.
bool float_vector(PyObject* a, Py_buffer* view) {
  if (PyObject_GetBuffer(a, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return false;
  }
  const char* f = view->format;
  const bool is_float = f != nullptr && (std::strcmp(f, "f") == 0 || std::strcmp(f, "=f") == 0 ||
                                         std::strcmp(f, "<f") == 0 || std::strcmp(f, "@f") == 0);
  if (view->ndim != 1 || view->itemsize != 4 || !is_float) {
    PyBuffer_Release(view);
    return false;
  }
  return true;
}

struct Buffers {
  Py_buffer x{}, y{};
  int held = 0;
  ~Buffers() {
    if (held > 1) PyBuffer_Release(&y);
    if (held > 0) PyBuffer_Release(&x);
  }
};

// What the last dot of a Core did (Context.last_call reads it).
struct Last {
  int kind = 0;  // 0: none yet, 1: NumPy's dot (n in the plan's NumPy window), 2: a report of dot_ex, 3: Python's
  int where = 0;
  std::size_t n = 0;
  dotcourse_report report{};
};

class Core {
 public:
  Core(nb::handle owner, int device, std::size_t n_max, unsigned cpu_threads) : n_max_(n_max) {
    need_library();
    owner_ = nb::steal(PyWeakref_NewRef(owner.ptr(), nullptr));
    if (!owner_.is_valid()) throw nb::python_error();
    dotcourse_context* ctx = nullptr;
    const dotcourse_status s = device < 0 ? api.create_cpu(cpu_threads, &ctx) : api.create(device, n_max, &ctx);
    check(s);
    ctx_ = ctx;
  }
  ~Core() {
    if (ctx_ != nullptr && g_library != nullptr) api.destroy(ctx_);
  }
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  std::size_t n_max() const noexcept { return n_max_; }
  bool closed() const noexcept { return ctx_ == nullptr; }
  std::uintptr_t handle() const noexcept { return reinterpret_cast<std::uintptr_t>(ctx_); }

  void close() {
    dotcourse_context* ctx = ctx_;
    ctx_ = nullptr;
    if (ctx != nullptr) check(api.destroy(ctx));
  }

  // pin_arrays: the registration cache's capacity (0: off); the first sightings kept here are 4 times
  // as many, as _pins.PinCache keeps.
  void set_fast(std::size_t numpy_from, std::size_t numpy_below, std::size_t pin_from, std::size_t pin_arrays) {
    numpy_from_ = numpy_from;
    numpy_below_ = numpy_below;
    pin_from_ = pin_from;
    pins_ = pin_arrays > 0;
    sightings_.clear();  // releases the weak references (the GIL is held)
    sightings_.resize(pins_ ? 4 * pin_arrays : 0);
    next_sighting_ = 0;
  }

  // Context.dot. Two float32 NumPy vectors: here, from end to end. Anything else: the owner's
  // _dot_any (Python), which checks every producer and dtype with one wording per error.
  nb::object dot(nb::handle x, nb::handle y, nb::handle where) {
    const int code = where_code(where.ptr());
    if (ctx_ == nullptr) raise(errors_module().attr("closed")());
    if (!g_numpy) import_numpy();
    if (numpy_float_vector(x.ptr()) && numpy_float_vector(y.ptr())) {
      PyArrayObject* ax = reinterpret_cast<PyArrayObject*>(x.ptr());
      PyArrayObject* ay = reinterpret_cast<PyArrayObject*>(y.ptr());
      const std::size_t n = static_cast<std::size_t>(PyArray_DIM(ax, 0));
      if (static_cast<std::size_t>(PyArray_DIM(ay, 0)) == n)
        return host_dot(x, y, static_cast<const float*>(PyArray_DATA(ax)), static_cast<const float*>(PyArray_DATA(ay)),
                        n, code);
    }
    nb::object owner = nb::borrow(PyWeakref_GetObject(owner_.ptr()));
    if (owner.is_none()) raise(errors_module().attr("closed")());
    return owner.attr("_dot_any")(x, y, code);
  }

  // A float32 host pair by address (the slow path's producers: __array_interface__ and the like).
  float dot_ptr(std::uintptr_t px, std::uintptr_t py, std::size_t n, int code) {
    live();
    return call_dot_ex(reinterpret_cast<const float*>(px), reinterpret_cast<const float*>(py), n, code);
  }

  int host_register(std::uintptr_t p, std::size_t bytes) {
    live();
    const int s = api.host_register(ctx_, reinterpret_cast<const void*>(p), bytes);
    if (s == DOTCOURSE_OK) registered_.push_back(p);
    return s;
  }
  void host_unregister(std::uintptr_t p) {
    live();
    registered_.erase(std::remove(registered_.begin(), registered_.end(), p), registered_.end());
    check(api.host_unregister(ctx_, reinterpret_cast<const void*>(p)));
  }

  float dot_device(std::uintptr_t px, std::uintptr_t py, std::size_t n, std::uintptr_t stream) {
    live();
    float r = 0.0f;
    dotcourse_status s;
    {
      nb::gil_scoped_release unlocked;
      s = api.dot_device(ctx_, reinterpret_cast<const float*>(px), reinterpret_cast<const float*>(py), n,
                         reinterpret_cast<void*>(stream), &r);
    }
    check(s);
    return r;
  }

  double dot_typed(std::uintptr_t px, int tx, std::uintptr_t py, int ty, std::size_t n, std::uintptr_t stream) {
    live();
    double r = 0.0;
    dotcourse_status s;
    {
      nb::gil_scoped_release unlocked;
      s = api.dot_typed(ctx_, reinterpret_cast<const void*>(px), static_cast<dotcourse_dtype>(tx),
                        reinterpret_cast<const void*>(py), static_cast<dotcourse_dtype>(ty), n,
                        reinterpret_cast<void*>(stream), &r);
    }
    check(s);
    return r;
  }

  double dot_typed_host(std::uintptr_t px, int tx, std::uintptr_t py, int ty, std::size_t n) {
    live();
    double r = 0.0;
    dotcourse_status s;
    {
      nb::gil_scoped_release unlocked;
      s = api.dot_typed_host(ctx_, reinterpret_cast<const void*>(px), static_cast<dotcourse_dtype>(tx),
                             reinterpret_cast<const void*>(py), static_cast<dotcourse_dtype>(ty), n, &r);
    }
    check(s);
    return r;
  }

  PlanTuple get_plan() {
    live();
    dotcourse_plan plan{};
    plan.size = sizeof plan;
    check(api.get_plan(ctx_, &plan));
    return plan_tuple(plan);
  }

  void set_plan(const std::vector<Row>& rows, bool calibrated) {
    live();
    const dotcourse_plan plan = plan_from(rows, calibrated);
    check(api.set_plan(ctx_, &plan));
  }

  PlanTuple calibrate(std::size_t n_limit) {
    live();
    dotcourse_plan plan{};
    plan.size = sizeof plan;
    dotcourse_status s;
    {
      nb::gil_scoped_release unlocked;
      s = api.calibrate(ctx_, n_limit, &plan);
    }
    check(s);
    return plan_tuple(plan);
  }

  // None before the first dot; an int n after NumPy's dot; else (where, n, path, n_cpu, n_gpu,
  // cpu_threads, registered, calibrated, seconds).
  nb::object last() const {
    if (last_.kind == 0) return nb::none();
    if (last_.kind == 1) return nb::int_(last_.n);
    if (last_.kind == 3) return last_other_;
    const dotcourse_report& r = last_.report;
    return nb::make_tuple(last_.where, last_.n, static_cast<int>(r.path), r.n_cpu, r.n_gpu, r.cpu_threads,
                          r.registered != 0, r.calibrated != 0, r.seconds);
  }
  // A call the Python side made (a device or typed dot, a LastCall object): last() returns it.
  void set_last(nb::object call) {
    last_.kind = 3;
    last_other_ = std::move(call);
  }

 private:
  void live() const {
    if (ctx_ == nullptr) raise(errors_module().attr("closed")());
  }

  nb::object host_dot(nb::handle x, nb::handle y, const float* px, const float* py, std::size_t n, int code) {
    if (code != 1 && n > n_max_) raise(errors_module().attr("too_large")(n, n_max_));
    if (code == 0 && n < numpy_below_ && n >= numpy_from_) {  // a plan measured NumPy's own dot faster here
      last_.kind = 1;
      last_.n = n;
      PyObject* args[2] = {x.ptr(), y.ptr()};
      nb::object r = nb::steal(PyObject_Vectorcall(g_np_dot, args, 2, nullptr));
      if (!r.is_valid()) throw nb::python_error();
      PyObject* f = PyNumber_Float(r.ptr());
      if (f == nullptr) throw nb::python_error();
      return nb::steal(f);
    }
    // The registration cache, where the GPU will read the arrays (see dotcourse._pins). A new array
    // is only noted here; Python's side runs for one seen before or one at a registered address.
    const bool wants_gpu = code == 2 || (code == 0 && n >= pin_from_);
    if (wants_gpu && pins_ && n * sizeof(float) >= kPinMin) {
      const std::size_t bytes = n * sizeof(float);
      const auto ax = reinterpret_cast<std::uintptr_t>(px), ay = reinterpret_cast<std::uintptr_t>(py);
      const int sx = sighting(x.ptr(), ax, bytes);
      const int sy = y.ptr() == x.ptr() || ay == ax ? 0 : sighting(y.ptr(), ay, bytes);
      if (sx != 0 || sy != 0) {
        nb::object owner = nb::borrow(PyWeakref_GetObject(owner_.ptr()));
        if (!owner.is_none()) owner.attr("_pin_seen")(x, ax, sx, y, ay, sy);
      }
    }
    Buffers b;  // exported for the call only where it releases the GIL (see float_vector)
    if (n >= kReleaseGil) {
      if (!float_vector(x.ptr(), &b.x)) throw std::runtime_error("dotcourse: x changed under the call");
      b.held = 1;
      if (!float_vector(y.ptr(), &b.y)) throw std::runtime_error("dotcourse: y changed under the call");
      b.held = 2;
      // _pin_seen above may have run Python code: the held buffers must still be the memory and
      // length read.
      const auto same = [n](const Py_buffer& v, const float* p) {
        return v.buf == p && v.len == static_cast<Py_ssize_t>(n * sizeof(float));
      };
      if (!same(b.x, px) || !same(b.y, py)) throw std::runtime_error("dotcourse: x or y changed under the call");
    }
    const float r = call_dot_ex(px, py, n, code);
    return nb::steal(PyFloat_FromDouble(r));
  }

  // What the registration cache must do with array `a` at p: 2 if p is registered (a use, for Python's
  // side to count), 1 if this same object was noted here at p before (its second sighting: Python's
  // side registers it), 0 for a first sighting, noted here (a weak reference, the oldest note
  // replaced). A Python call on every new array cost a calibrated context its place against the same
  // CPU dot on a context without the cache (library/bench/bench_host.py, from the n where its plan
  // registers): right after the caller wrote a large new array, the interpreter's own memory waits
  // behind that array's write-back, and the wait grows with the array.
  int sighting(PyObject* a, std::uintptr_t p, std::size_t bytes) {
    if (std::find(registered_.begin(), registered_.end(), p) != registered_.end()) return 2;
    for (Sighting& s : sightings_) {
      if (s.p != p || s.bytes != bytes) continue;
      if (PyWeakref_GetObject(s.ref.ptr()) == a) {
        s = Sighting{};
        return 1;
      }
      s = Sighting{};  // another array at a reused address: its note is stale
    }
    if (sightings_.empty()) return 0;
    PyObject* ref = PyWeakref_NewRef(a, nullptr);
    if (ref == nullptr) {  // an object without weak references: never registered (staged)
      PyErr_Clear();
      return 0;
    }
    sightings_[next_sighting_] = Sighting{p, bytes, nb::steal(ref)};
    next_sighting_ = (next_sighting_ + 1) % sightings_.size();
    return 0;
  }

  float call_dot_ex(const float* x, const float* y, std::size_t n, int code) {
    dotcourse_options opts{sizeof(dotcourse_options), static_cast<dotcourse_where>(code)};
    dotcourse_report report{};
    report.size = sizeof report;
    float result = 0.0f;
    dotcourse_status s;
    if (n < kReleaseGil) {
      s = api.dot_ex(ctx_, x, y, n, &opts, &result, &report);
    } else {
      nb::gil_scoped_release unlocked;
      s = api.dot_ex(ctx_, x, y, n, &opts, &result, &report);
    }
    if (s != DOTCOURSE_OK) raise_status(s);
    last_.kind = 2;
    last_.where = code;
    last_.n = n;
    last_.report = report;
    return result;
  }

  dotcourse_context* ctx_ = nullptr;
  std::size_t n_max_;
  std::size_t numpy_from_ = 0;   // NumPy's own dot for n in [numpy_from_, numpy_below_)
  std::size_t numpy_below_ = 0;
  std::size_t pin_from_ = SIZE_MAX;
  bool pins_ = false;
  struct Sighting {
    std::uintptr_t p = 0;
    std::size_t bytes = 0;
    nb::object ref;  // a weak reference to the array
  };
  std::vector<Sighting> sightings_;  // first sightings (see sighting()), 4 x the cache's capacity
  std::size_t next_sighting_ = 0;
  std::vector<std::uintptr_t> registered_;  // the addresses Python's cache registered through this Core
  nb::object owner_;  // a weak reference to the Context (no cycle: the Context holds this Core)
  Last last_;
  nb::object last_other_;
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "dotcourse's compiled core: the fast path of Context.dot and the C API (libdotcourse) it calls.";
  g_auto = PyUnicode_InternFromString("auto");
  g_cpu = PyUnicode_InternFromString("cpu");
  g_gpu = PyUnicode_InternFromString("gpu");

  m.def("open", &open_library, nb::arg("path"), "Opens libdotcourse at `path` (once per process).");
  m.def("is_open", [] { return g_library != nullptr; });
  m.def("path", [] { return g_path; });
  m.def("version", [] {
    need_library();
    return std::string(api.version());
  });
  m.def("status_string", [](int status) {
    need_library();
    return std::string(api.status_string(static_cast<dotcourse_status>(status)));
  });
  m.def("last_error", [] {
    need_library();
    return std::string(api.last_error());
  });
  m.def("accumulator", [](int tx, int ty) {
    need_library();
    dotcourse_dtype acc = DOTCOURSE_FLOAT32;
    check(api.accumulator(static_cast<dotcourse_dtype>(tx), static_cast<dotcourse_dtype>(ty), &acc));
    return static_cast<int>(acc);
  });
  m.def("plan_choose", [](const std::vector<Row>& rows, std::size_t n, bool registered) {
    need_library();
    const dotcourse_plan plan = plan_from(rows, true);
    dotcourse_path path = DOTCOURSE_PATH_CPU;
    std::size_t n_gpu = 0;
    check(api.plan_choose(&plan, n, registered ? 1 : 0, &path, &n_gpu));
    return std::make_tuple(static_cast<int>(path), n_gpu);
  });
  // The C boundary itself, for the tests: dotcourse_dot on a raw handle (0 is NULL); (status, result).
  m.def("c_dot", [](std::uintptr_t handle, std::uintptr_t px, std::uintptr_t py, std::size_t n) {
    need_library();
    float r = 0.0f;
    const dotcourse_status s = api.dot(reinterpret_cast<dotcourse_context*>(handle), reinterpret_cast<const float*>(px),
                                       reinterpret_cast<const float*>(py), n, &r);
    return std::make_tuple(static_cast<int>(s), r);
  });

  nb::class_<Core>(m, "Core")
      .def(nb::init<nb::handle, int, std::size_t, unsigned>(), nb::arg("owner"), nb::arg("device"), nb::arg("n_max"),
           nb::arg("cpu_threads"))
      .def("dot", &Core::dot, nb::arg("x").none(), nb::arg("y").none(), nb::arg("where").none() = nb::borrow(g_auto))
      .def("dot_ptr", &Core::dot_ptr)
      .def("register", &Core::host_register)
      .def("unregister", &Core::host_unregister)
      .def("dot_device", &Core::dot_device)
      .def("dot_typed", &Core::dot_typed)
      .def("dot_typed_host", &Core::dot_typed_host)
      .def("get_plan", &Core::get_plan)
      .def("set_plan", &Core::set_plan)
      .def("calibrate", &Core::calibrate)
      .def("set_fast", &Core::set_fast)
      .def("last", &Core::last)
      .def("set_last", &Core::set_last)
      .def("close", &Core::close)
      .def_prop_ro("closed", &Core::closed)
      .def_prop_ro("handle", &Core::handle)
      .def_prop_ro("n_max", &Core::n_max);
}
