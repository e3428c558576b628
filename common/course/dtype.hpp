#pragma once
/// \file dtype.hpp
/// \brief Element types beyond float: names, sizes, seeded random values of each type, the fp64 (or
/// exact integer) reference of a dot of any two of them, and the error bound that follows from the
/// accumulator's unit roundoff (chapter 10).
///
/// Values are made by the same counter-based generator as random.hpp: value i of a stream depends
/// only on (seed, i), so the device fills and the host reference agree without copying gigabytes.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/random.hpp"
#include "course/reference.hpp"

namespace course {

/// The element types the kit knows. The integer accumulators (i32, i64) appear only as
/// accumulators, never as inputs.
enum class Dtype { f64, f32, f16, bf16, i8, boolean, i32, i64 };

/// "float64", "float32", "float16", "bfloat16", "int8", "bool", "int32", "int64" (NumPy's names).
const char* dtype_name(Dtype t);
/// Bytes per element.
std::size_t dtype_size(Dtype t);
/// True for i8, boolean, i32, i64.
bool dtype_is_integer(Dtype t);
/// The unit roundoff of an accumulator of type t: 2^-53, 2^-24, 2^-11, 2^-8; 0 for the integers
/// (an integer accumulator that does not overflow is exact).
double unit_roundoff(Dtype t);

/// The Dtype of a C++ element type, at compile time (dtype_of<float>() == Dtype::f32).
template <class T> constexpr Dtype dtype_of();
template <> constexpr Dtype dtype_of<double>() { return Dtype::f64; }
template <> constexpr Dtype dtype_of<float>() { return Dtype::f32; }
template <> constexpr Dtype dtype_of<__half>() { return Dtype::f16; }
template <> constexpr Dtype dtype_of<__nv_bfloat16>() { return Dtype::bf16; }
template <> constexpr Dtype dtype_of<std::int8_t>() { return Dtype::i8; }
template <> constexpr Dtype dtype_of<bool>() { return Dtype::boolean; }
template <> constexpr Dtype dtype_of<std::int32_t>() { return Dtype::i32; }
template <> constexpr Dtype dtype_of<long long>() { return Dtype::i64; }

/// Value i of stream `seed` as a T: the floating types uniform in [−1, 1) (random_at, rounded to
/// the type), int8 uniform over all 256 values, bool 0 or 1 with equal odds.
template <class T>
COURSE_HOST_DEVICE inline T random_element(std::uint64_t seed, std::uint64_t i) {
  return static_cast<T>(random_at(seed, i, -1.0f, 1.0f));
}
template <>
COURSE_HOST_DEVICE inline __half random_element<__half>(std::uint64_t seed, std::uint64_t i) {
  return __float2half_rn(random_at(seed, i, -1.0f, 1.0f));
}
template <>
COURSE_HOST_DEVICE inline __nv_bfloat16 random_element<__nv_bfloat16>(std::uint64_t seed, std::uint64_t i) {
  return __float2bfloat16_rn(random_at(seed, i, -1.0f, 1.0f));
}
template <>
COURSE_HOST_DEVICE inline std::int8_t random_element<std::int8_t>(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(mix64(seed, i) >> 56));
}
template <>
COURSE_HOST_DEVICE inline bool random_element<bool>(std::uint64_t seed, std::uint64_t i) {
  return (mix64(seed, i) >> 63) != 0;
}

/// Element i of a typed array, as a double (exact for every input type).
double element_as_double(Dtype t, const void* data, std::size_t i);

/// n random elements of type t, as raw bytes (n · dtype_size(t) of them).
std::vector<unsigned char> random_bytes(Dtype t, std::size_t n, std::uint64_t seed);

/// Fills d_out (n elements of type t) with the values random_bytes would give. Asynchronous.
void fill_random_device_typed(Dtype t, void* d_out, std::size_t n, std::uint64_t seed, cudaStream_t stream);

/// The reference of a dot of two typed arrays: the fp64 sum (and Σ|x_i·y_i| for the bound), and,
/// when both inputs are integers, the exact sum as a 64-bit integer.
struct TypedReference {
  Reference ref;               ///< fp64 value, Σ|x·y|, n
  bool exact = false;          ///< both inputs are integers: `exact_value` is the answer, bit for bit
  long long exact_value = 0;   ///< Σ x_i·y_i in 64-bit integers (when exact)
};

/// The reference of Σ x[i]·y[i] for arrays in host memory.
TypedReference reference_dot_typed(Dtype tx, const void* x, Dtype ty, const void* y, std::size_t n);

/// The same for x = random_bytes(tx, n, seed_x), y = random_bytes(ty, n, seed_y), computed from the
/// generator itself (several host threads), without holding the vectors: for sizes whose copy to
/// the host would cost gigabytes.
TypedReference streamed_reference_typed(Dtype tx, std::uint64_t seed_x, Dtype ty, std::uint64_t seed_y,
                                        std::size_t n);

/// dot_error_bound for an accumulator of unit roundoff u (reference.hpp's bound, with u in place of
/// float32's 2^-24). u = 0 gives 0: an exact answer is required.
double dot_error_bound(const Reference& ref, double u);

/// Compares `got` with a typed reference: exact references must match exactly (and `got` must be a
/// whole number), the others within dot_error_bound(ref, u).
Verdict check_dot_typed(double got, const TypedReference& ref, double u);

}  // namespace course
