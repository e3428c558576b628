// libdotcourse: the few cuBLAS functions the kit's Context calls (common/src/context.cu: a handle
// bound to the context's stream), defined here so that the library does not need libcublas at load
// time. The first call opens libcublas.so.<major of the headers built against> and forwards to it;
// a context without a GPU never calls one, so a host without cuBLAS (or without any CUDA library:
// the wheel links the runtime statically) imports the library and computes on the CPU.
//
// The definitions are hidden (the library exports only dotcourse_*), so they satisfy the kit's calls
// inside libdotcourse.so alone; a program that links cuBLAS itself keeps its own. When a new cuBLAS
// function is called from the library, the wheel's build (which links no cuBLAS) fails to link, and
// ctest ch07.no_cublas_needed fails in the course build: add it here.
//
// Where the library is searched: the loader's own order for dlopen (this library's RUNPATH,
// LD_LIBRARY_PATH, the ldconfig cache), then $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (a pip
// install next to a toolkit that is not in the loader's path).

#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace {

#define DOTCOURSE_STR2(x) #x
#define DOTCOURSE_STR(x) DOTCOURSE_STR2(x)
constexpr const char* kSoname = "libcublas.so." DOTCOURSE_STR(CUBLAS_VER_MAJOR);

struct Cublas {
  void* handle = nullptr;
  std::string error;  // why it could not be opened (empty once open)
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
};

template <class F>
bool resolve(Cublas& c, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(c.handle, name));
  if (f == nullptr) c.error = std::string(kSoname) + " lacks " + name;
  return f != nullptr;
}

Cublas open_cublas() {
  Cublas c;
  std::string tried;
  c.handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (c.handle == nullptr) {
    const char* why = dlerror();
    tried = why ? why : kSoname;
    std::string dirs[2];
    if (const char* home = std::getenv("CUDA_HOME")) dirs[0] = std::string(home) + "/lib64/";
    dirs[1] = "/usr/local/cuda/lib64/";
    for (const std::string& dir : dirs) {
      if (dir.empty() || c.handle != nullptr) continue;
      c.handle = dlopen((dir + kSoname).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (c.handle == nullptr) tried += "; " + dir + kSoname;
    }
  }
  if (c.handle == nullptr) {
    c.error = std::string("cuBLAS could not be loaded (") + tried +
              "): install the CUDA toolkit's cuBLAS, or add its folder to LD_LIBRARY_PATH";
    return c;
  }
  if (resolve(c, c.create, "cublasCreate_v2") && resolve(c, c.destroy, "cublasDestroy_v2") &&
      resolve(c, c.status_name, "cublasGetStatusName") && resolve(c, c.status_string, "cublasGetStatusString") &&
      resolve(c, c.set_pointer_mode, "cublasSetPointerMode_v2") && resolve(c, c.set_stream, "cublasSetStream_v2"))
    return c;
  dlclose(c.handle);
  c.handle = nullptr;
  return c;
}

// Opened once, on the first call (thread-safe); kept open for the life of the process.
const Cublas& cublas() {
  static const Cublas c = open_cublas();
  return c;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  const Cublas& c = cublas();
  if (c.handle == nullptr) {
    if (handle != nullptr) *handle = nullptr;
    return CUBLAS_STATUS_NOT_INITIALIZED;  // cublasGetStatusString then says why
  }
  return c.create(handle);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  const Cublas& c = cublas();
  return c.handle ? c.destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  const Cublas& c = cublas();
  return c.handle ? c.set_pointer_mode(handle, mode) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  const Cublas& c = cublas();
  return c.handle ? c.set_stream(handle, stream) : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  const Cublas& c = cublas();
  return c.handle ? c.status_name(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  const Cublas& c = cublas();
  return c.handle ? c.status_string(status) : c.error.c_str();
}

}  // extern "C"
