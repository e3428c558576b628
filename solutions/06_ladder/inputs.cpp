// Chapter 06 — the reference for inputs generated on the device.
//
// course::fill_random_device and course::random_vector give value i of a stream as a function of
// (seed, i) alone, so the host can recompute any element without a copy: the fp64 reference of a
// 2^31-element dot product then needs no 17 GB of host memory, only time (about a second per 2^28
// elements and core). The kit computes it (course::reference_dot_from_seeds); chapter 05's
// beyond-2^32 test uses the same function.

#include "course/reference.hpp"
#include "dot.hpp"

namespace ch06 {

course::Reference streamed_reference(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y) {
  return course::reference_dot_from_seeds(n, seed_x, seed_y);
}

}  // namespace ch06
