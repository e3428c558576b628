#include "timeline.hpp"

#include <algorithm>

#include "course/check.hpp"

namespace ch09 {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::h2d: return "h2d";
    case Engine::kernel: return "kernel";
    case Engine::d2h: return "d2h";
  }
  return "?";
}

cudaEvent_t Timeline::event(std::size_t i) {
  while (events_.size() <= i) events_.emplace_back();
  return events_[i];
}

void Timeline::start(cudaStream_t stream) {
  ops_.clear();
  CUDA_CHECK(cudaEventRecord(event(0), stream));
}

int Timeline::begin(Engine engine, int stream_index, int chunk, cudaStream_t stream) {
  const int index = static_cast<int>(ops_.size());
  ops_.push_back({engine, stream_index, chunk});
  CUDA_CHECK(cudaEventRecord(event(1 + 2 * static_cast<std::size_t>(index)), stream));
  return index;
}

void Timeline::end(int index, cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecord(event(2 + 2 * static_cast<std::size_t>(index)), stream));
}

std::vector<Span> Timeline::spans() const {
  std::vector<Span> out;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    float ready = 0, end = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ready, events_[0], events_[1 + 2 * i]));
    CUDA_CHECK(cudaEventElapsedTime(&end, events_[0], events_[2 + 2 * i]));
    Span s;
    s.stream = ops_[i].stream;
    s.engine = ops_[i].engine;
    s.chunk = ops_[i].chunk;
    s.ready_ms = ready;
    s.start_ms = ready;
    s.end_ms = end;
    out.push_back(s);
  }
  // One engine copies one thing at a time: a copy starts no earlier than the engine's previous
  // copy ended (taken in order of completion).
  for (Engine e : {Engine::h2d, Engine::d2h}) {
    std::vector<Span*> on;
    for (auto& s : out)
      if (s.engine == e) on.push_back(&s);
    std::sort(on.begin(), on.end(), [](const Span* a, const Span* b) { return a->end_ms < b->end_ms; });
    double free_at = 0;
    for (Span* s : on) {
      s->start_ms = std::min(s->end_ms, std::max(s->ready_ms, free_at));
      free_at = s->end_ms;
    }
  }
  return out;
}

namespace {
double union_length(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, lo = 0, hi = -1;
  bool open = false;
  for (const auto& [a, b] : iv) {
    if (!open || a > hi) {
      if (open) total += hi - lo;
      lo = a;
      hi = b;
      open = true;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (open) total += hi - lo;
  return total;
}
}  // namespace

Overlap overlap_of(const std::vector<Span>& spans) {
  Overlap o;
  if (spans.empty()) return o;
  double first = spans.front().start_ms, last = spans.front().end_ms;
  std::vector<std::pair<double, double>> per[3];
  for (const auto& s : spans) {
    first = std::min(first, s.start_ms);
    last = std::max(last, s.end_ms);
    o.sum_ms += s.end_ms - s.start_ms;
    per[static_cast<int>(s.engine)].emplace_back(s.start_ms, s.end_ms);
  }
  o.wall_ms = last - first;
  double busiest = 0;
  for (int e = 0; e < 3; ++e) {
    o.busy_ms[e] = union_length(per[e]);
    busiest = std::max(busiest, o.busy_ms[e]);
  }
  o.overlap_pct = o.sum_ms > 0 ? 100.0 * (1.0 - o.wall_ms / o.sum_ms) : 0.0;
  o.bottleneck_pct = o.wall_ms > 0 ? 100.0 * busiest / o.wall_ms : 0.0;
  return o;
}

}  // namespace ch09
