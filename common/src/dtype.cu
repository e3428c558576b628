#include "course/dtype.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "course/check.hpp"

namespace course {
namespace {

template <class T>
__global__ void fill_typed_kernel(T* __restrict__ out, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = random_element<T>(seed, i);
}

template <class T>
void fill_typed(T* d_out, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  const int block = 256;
  const std::size_t blocks = std::min<std::size_t>((n + block - 1) / block, 65535);
  fill_typed_kernel<T><<<static_cast<unsigned>(blocks), block, 0, stream>>>(d_out, n, seed);
  CUDA_CHECK_LAUNCH("fill_typed_kernel");
}

template <class T>
double as_double(T v) {
  return static_cast<double>(v);
}
template <>
double as_double<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
double as_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

/// Calls f(T{}) with the C++ type of an input dtype.
template <class F>
void with_input_type(Dtype t, F&& f) {
  switch (t) {
    case Dtype::f64: f(double{}); return;
    case Dtype::f32: f(float{}); return;
    case Dtype::f16: f(__half{}); return;
    case Dtype::bf16: f(__nv_bfloat16{}); return;
    case Dtype::i8: f(std::int8_t{}); return;
    case Dtype::boolean: f(bool{}); return;
    default: break;
  }
  throw UsageError(std::string("not an input element type: ") + dtype_name(t));
}

/// The partial reference over [begin, end) of a per-index value function for x and y.
struct Partial {
  double s[4] = {0, 0, 0, 0};
  double a = 0;
  long long exact = 0;
};

template <class Vx, class Vy>
Partial partial_reference(Vx&& vx, Vy&& vy, bool integer, std::size_t begin, std::size_t end) {
  Partial p;
  std::size_t k = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const double xi = vx(i), yi = vy(i);
    const double prod = xi * yi;  // exact for every pair of input types except double·double and float·double
    p.s[k] += prod;
    k = (k + 1) & 3;
    p.a += std::fabs(prod);
    if (integer) p.exact += static_cast<long long>(xi) * static_cast<long long>(yi);
  }
  return p;
}

TypedReference combine(const std::vector<Partial>& parts, bool integer, std::size_t n) {
  TypedReference r;
  double s[4] = {0, 0, 0, 0};
  double a = 0;
  long long exact = 0;
  for (const auto& p : parts) {
    for (int k = 0; k < 4; ++k) s[k] += p.s[k];
    a += p.a;
    exact += p.exact;
  }
  r.ref = Reference{(s[0] + s[1]) + (s[2] + s[3]), a, n};
  r.exact = integer;
  r.exact_value = exact;
  if (integer) r.ref.value = static_cast<double>(exact);
  return r;
}

}  // namespace

const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::f64: return "float64";
    case Dtype::f32: return "float32";
    case Dtype::f16: return "float16";
    case Dtype::bf16: return "bfloat16";
    case Dtype::i8: return "int8";
    case Dtype::boolean: return "bool";
    case Dtype::i32: return "int32";
    case Dtype::i64: return "int64";
  }
  return "unknown";
}

std::size_t dtype_size(Dtype t) {
  switch (t) {
    case Dtype::f64: case Dtype::i64: return 8;
    case Dtype::f32: case Dtype::i32: return 4;
    case Dtype::f16: case Dtype::bf16: return 2;
    case Dtype::i8: case Dtype::boolean: return 1;
  }
  return 0;
}

bool dtype_is_integer(Dtype t) {
  return t == Dtype::i8 || t == Dtype::boolean || t == Dtype::i32 || t == Dtype::i64;
}

double unit_roundoff(Dtype t) {
  switch (t) {
    case Dtype::f64: return std::ldexp(1.0, -53);
    case Dtype::f32: return std::ldexp(1.0, -24);
    case Dtype::f16: return std::ldexp(1.0, -11);
    case Dtype::bf16: return std::ldexp(1.0, -8);
    default: return 0.0;
  }
}

double element_as_double(Dtype t, const void* data, std::size_t i) {
  double v = 0;
  with_input_type(t, [&](auto tag) {
    using T = decltype(tag);
    T e;
    std::memcpy(&e, static_cast<const unsigned char*>(data) + i * sizeof(T), sizeof(T));
    v = as_double(e);
  });
  return v;
}

std::vector<unsigned char> random_bytes(Dtype t, std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> bytes(n * dtype_size(t));
  with_input_type(t, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < n; ++i) {
      const T e = random_element<T>(seed, i);
      std::memcpy(bytes.data() + i * sizeof(T), &e, sizeof(T));
    }
  });
  return bytes;
}

void fill_random_device_typed(Dtype t, void* d_out, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  with_input_type(t, [&](auto tag) {
    using T = decltype(tag);
    fill_typed(static_cast<T*>(d_out), n, seed, stream);
  });
}

TypedReference reference_dot_typed(Dtype tx, const void* x, Dtype ty, const void* y, std::size_t n) {
  const bool integer = dtype_is_integer(tx) && dtype_is_integer(ty);
  const Partial p = partial_reference([&](std::size_t i) { return element_as_double(tx, x, i); },
                                      [&](std::size_t i) { return element_as_double(ty, y, i); }, integer, 0, n);
  return combine({p}, integer, n);
}

TypedReference streamed_reference_typed(Dtype tx, std::uint64_t seed_x, Dtype ty, std::uint64_t seed_y,
                                        std::size_t n) {
  const bool integer = dtype_is_integer(tx) && dtype_is_integer(ty);
  const std::size_t chunks = fill_threads(n, std::thread::hardware_concurrency());
  std::vector<Partial> parts(chunks);
  with_input_type(tx, [&](auto xtag) {
    with_input_type(ty, [&](auto ytag) {
      using X = decltype(xtag);
      using Y = decltype(ytag);
      std::vector<std::thread> workers;
      for (std::size_t c = 0; c < chunks; ++c)
        workers.emplace_back([&, c] {
          parts[c] = partial_reference([&](std::size_t i) { return as_double(random_element<X>(seed_x, i)); },
                                       [&](std::size_t i) { return as_double(random_element<Y>(seed_y, i)); },
                                       integer, n * c / chunks, n * (c + 1) / chunks);
        });
      for (auto& w : workers) w.join();
    });
  });
  return combine(parts, integer, n);
}

double dot_error_bound(const Reference& ref, double u) {
  if (u <= 0) return 0.0;
  constexpr double lambda = 8.0;  // as in reference.cpp: a false alarm rarer than 1 in 10^4 at n = 2^31
  const double n = static_cast<double>(ref.n) + 1.0;
  return std::expm1(lambda * std::sqrt(n) * u + n * u * u / (1.0 - u)) * ref.sum_abs;
}

Verdict check_dot_typed(double got, const TypedReference& tref, double u) {
  if (!tref.exact) {
    if (u == std::ldexp(1.0, -24)) return check_dot(got, tref.ref);  // the float32 case, word for word
    Verdict v = check_dot(got, tref.ref);
    if (std::isfinite(tref.ref.value)) {
      v.bound = dot_error_bound(tref.ref, u);
      v.ok = std::isfinite(got) && v.error <= v.bound;
      char buf[256];
      if (std::isnan(got))
        std::snprintf(buf, sizeof buf, "got NaN, expected %.17g: the result was never written, or a NaN was read",
                      tref.ref.value);
      else
        std::snprintf(buf, sizeof buf, "got %.17g, expected %.17g (fp64): error %.3g %s the allowed %.3g (u = 2^%d)",
                      got, tref.ref.value, v.error, v.ok ? "within" : "exceeds", v.bound,
                      static_cast<int>(std::lround(std::log2(u))));
      v.message = buf;
    }
    return v;
  }
  Verdict v;
  v.got = got;
  v.expected = static_cast<double>(tref.exact_value);
  v.bound = 0;
  v.error = std::fabs(got - v.expected);
  v.rel_error = v.expected != 0 ? v.error / std::fabs(v.expected) : v.error;
  v.ok = got == v.expected && std::nearbyint(got) == got;
  char buf[256];
  std::snprintf(buf, sizeof buf, "got %.17g, expected exactly %lld (integer inputs: the sum must be exact)", got,
                tref.exact_value);
  v.message = buf;
  return v;
}

}  // namespace course
