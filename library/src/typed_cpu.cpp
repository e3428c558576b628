// libdotcourse: the dot of any two element types on the CPU, for a context without a GPU
// (dotcourse_create_cpu): what dotcourse_dot_typed_host computes there. Library code, no exercise.
//
// The same contract as the GPU's typed dot (library/src/typed.cu): each input read at its own width,
// the result the accumulator's value (dotcourse_accumulator): int8 and bool pairs exact in 64 bits;
// a float64 input in double; every other pair a float32 value. Here the float pairs are summed in
// double (a product of two float32 values is exact in double) and rounded once at the end, which
// keeps the result inside the error bound the GPU's float accumulator meets. The pool's parts are
// added in part order: the same inputs and pool size give the same bits. No CUDA: a host with no
// driver, runtime or cuBLAS computes this.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "course/check.hpp"
#include "typed.hpp"

namespace ch07 {
namespace {

// IEEE binary16 and bfloat16 as the bits they are (no CUDA header on this path).
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

float to_float(Half h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  std::uint32_t man = h.bits & 0x3ffu;
  std::uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);  // inf, NaN
  } else if (exp != 0) {
    out = sign | ((exp + 112) << 23) | (man << 13);  // 112 = 127 - 15
  } else if (man == 0) {
    out = sign;  // +-0
  } else {       // subnormal: a normal float32 after shifting the leading 1 into place
    int e = 113;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      --e;
    }
    out = sign | (static_cast<std::uint32_t>(e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

float to_float(BFloat16 b) {
  const std::uint32_t out = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

double value(float v) { return v; }
double value(double v) { return v; }
double value(Half v) { return to_float(v); }
double value(BFloat16 v) { return to_float(v); }
std::int64_t value(std::int8_t v) { return v; }
std::int64_t value(std::uint8_t v) { return v != 0; }  // bool: one byte, 0 or 1

// Below this many elements one thread does it all (waking the pool costs more).
constexpr std::size_t kSerialMax = std::size_t{1} << 15;

template <class X, class Y>
double dot_pair(course::ThreadPool& pool, const void* vx, const void* vy, std::size_t n) {
  const X* x = static_cast<const X*>(vx);
  const Y* y = static_cast<const Y*>(vy);
  using Sum = decltype(value(X{}) * value(Y{}));  // int64 for two integer types, else double
  auto part_sum = [&](std::size_t begin, std::size_t end) {
    Sum lanes[8] = {};  // independent sums: the compiler keeps them in registers
    std::size_t i = begin;
    for (; i + 8 <= end; i += 8)
      for (int l = 0; l < 8; ++l) lanes[l] += value(x[i + l]) * value(y[i + l]);
    Sum s = 0;
    for (Sum l : lanes) s += l;
    for (; i < end; ++i) s += value(x[i]) * value(y[i]);
    return s;
  };
  const unsigned parts = n < kSerialMax ? 1u : pool.size();
  std::vector<Sum> partial(parts, Sum{0});
  if (parts == 1) {
    partial[0] = part_sum(0, n);
  } else {
    const std::size_t step = (n + parts - 1) / parts;
    pool.run([&](unsigned p) {
      const std::size_t begin = std::min(n, p * step), end = std::min(n, begin + step);
      partial[p] = part_sum(begin, end);
    });
  }
  Sum total = 0;
  for (Sum s : partial) total += s;  // in part order: deterministic
  if constexpr (std::is_same_v<Sum, std::int64_t>) {
    return static_cast<double>(total);
  } else if constexpr (std::is_same_v<X, double> || std::is_same_v<Y, double>) {
    return total;
  } else {
    return static_cast<double>(static_cast<float>(total));  // the float32 accumulator's type
  }
}

template <class X>
double dispatch_y(course::ThreadPool& pool, const void* x, dotcourse_dtype ty, const void* y, std::size_t n) {
  switch (ty) {
    case DOTCOURSE_FLOAT32: return dot_pair<X, float>(pool, x, y, n);
    case DOTCOURSE_FLOAT64: return dot_pair<X, double>(pool, x, y, n);
    case DOTCOURSE_FLOAT16: return dot_pair<X, Half>(pool, x, y, n);
    case DOTCOURSE_BFLOAT16: return dot_pair<X, BFloat16>(pool, x, y, n);
    case DOTCOURSE_INT8: return dot_pair<X, std::int8_t>(pool, x, y, n);
    case DOTCOURSE_BOOL: return dot_pair<X, std::uint8_t>(pool, x, y, n);
    default: break;
  }
  throw course::UsageError("y_dtype " + std::to_string(static_cast<int>(ty)) + " is not an input dtype");
}

}  // namespace

double cpu_dot_typed(course::ThreadPool& pool, const void* x, dotcourse_dtype tx, const void* y, dotcourse_dtype ty,
                     std::size_t n) {
  switch (tx) {
    case DOTCOURSE_FLOAT32: return dispatch_y<float>(pool, x, ty, y, n);
    case DOTCOURSE_FLOAT64: return dispatch_y<double>(pool, x, ty, y, n);
    case DOTCOURSE_FLOAT16: return dispatch_y<Half>(pool, x, ty, y, n);
    case DOTCOURSE_BFLOAT16: return dispatch_y<BFloat16>(pool, x, ty, y, n);
    case DOTCOURSE_INT8: return dispatch_y<std::int8_t>(pool, x, ty, y, n);
    case DOTCOURSE_BOOL: return dispatch_y<std::uint8_t>(pool, x, ty, y, n);
    default: break;
  }
  throw course::UsageError("x_dtype " + std::to_string(static_cast<int>(tx)) + " is not an input dtype");
}

}  // namespace ch07
