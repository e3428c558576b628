#include "course/inputs.hpp"

#include "course/random.hpp"

namespace course {

HostDotInputs::HostDotInputs(std::size_t n_, std::uint64_t seed)
    : n(n_), x(random_vector(n_, seed)), y(random_vector(n_, seed_y(seed))) {
  plant_spikes(x, y);
  ref = reference_dot(x.data(), y.data(), n);
}

DeviceDotInputs::DeviceDotInputs(std::size_t n_, std::uint64_t seed, cudaStream_t stream)
    : HostDotInputs(n_, seed), d_x(n_), d_y(n_), d_result(1) {
  d_x.upload_async(x.data(), n, stream);
  d_y.upload_async(y.data(), n, stream);
}

}  // namespace course
