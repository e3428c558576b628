#pragma once
/// \file inputs.hpp
/// \brief The inputs of a dot product, made one way for every driver and test.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "course/buffer.hpp"
#include "course/reference.hpp"

namespace course {

/// x and y of n elements made from `seed`: x is random stream `seed`, y is stream seed_y(seed),
/// both signed and uniform in [−1, 1), with spikes planted by plant_spikes (signed data cancels:
/// at large n the answer sits far below the tolerance, so even 0 would pass; a lost spike cannot
/// hide), and their fp64 reference.
struct HostDotInputs {
  HostDotInputs() = default;
  HostDotInputs(std::size_t n, std::uint64_t seed);
  std::size_t n = 0;
  std::vector<float> x, y;
  Reference ref;
};

/// HostDotInputs and their device copies, uploaded on `stream` (work enqueued on it later sees
/// them; x and y live as long as the copies may read them), and a one-float device result.
struct DeviceDotInputs : HostDotInputs {
  DeviceDotInputs(std::size_t n, std::uint64_t seed, cudaStream_t stream);
  DeviceBuffer<float> d_x, d_y, d_result;
};

}  // namespace course
