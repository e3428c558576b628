// Chapter 06 — the reference for inputs generated on the device.
//
// course::fill_random_device and course::random_vector give value i of a stream as a function of
// (seed, i) alone, so the host can recompute any element without a copy: the fp64 reference of a
// 2^31-element dot product then needs no 17 GB of host memory, only time (about a second per 2^28
// elements and core).

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "course/random.hpp"
#include "ladder.hpp"

namespace ch06 {

course::Reference streamed_reference(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y) {
  // Fixed chunks, each summed in order and combined in order: the same value on every run.
  const std::size_t chunks = n < (std::size_t{1} << 20) ? 1 : 16;
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<double> value(chunks, 0.0), sum_abs(chunks, 0.0);
  auto work = [&](unsigned first) {
    for (std::size_t c = first; c < chunks; c += workers) {
      const std::size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      double s = 0.0, a = 0.0;
      for (std::size_t i = begin; i < end; ++i) {
        const double p = static_cast<double>(course::random_at(seed_x, i, -1.0f, 1.0f)) *
                         static_cast<double>(course::random_at(seed_y, i, -1.0f, 1.0f));
        s += p;
        a += std::fabs(p);
      }
      value[c] = s;
      sum_abs[c] = a;
    }
  };
  if (chunks == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w) threads.emplace_back(work, w);
    for (auto& t : threads) t.join();
  }
  course::Reference ref;
  ref.n = n;
  for (std::size_t c = 0; c < chunks; ++c) {
    ref.value += value[c];
    ref.sum_abs += sum_abs[c];
  }
  return ref;
}

}  // namespace ch06
