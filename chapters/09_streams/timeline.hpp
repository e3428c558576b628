#pragma once
/// \file
/// \brief A stream timeline without Nsight: an event before and after every copy and kernel.
///
/// Each operation of a pipeline is bracketed by two CUDA events on its stream. The GPU stamps an
/// event when the stream reaches it, so `end` is when the operation finished and `begin` is when
/// it became ready (the previous operation of its stream had finished). A copy that is ready may
/// still wait for its copy engine, busy with another stream's copy: copies on one engine run one
/// after another, so the start of a copy is taken as the later of its ready time and the end of
/// the engine's previous copy. Kernels of different streams may truly run at once: their start
/// is their ready time.

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "course/stream.hpp"

namespace ch09 {

/// Where an operation runs: the host-to-device copy engine, the SMs, the device-to-host engine.
enum class Engine { h2d = 0, kernel = 1, d2h = 2 };
const char* engine_name(Engine e);

/// One operation on the GPU's clock, in milliseconds from the pipeline's first event.
struct Span {
  int stream = 0;
  Engine engine = Engine::h2d;
  int chunk = 0;
  double ready_ms = 0;  ///< the stream reached the operation
  double start_ms = 0;  ///< it started (copies: also after the engine's previous copy)
  double end_ms = 0;    ///< it finished
};

/// The events of one recorded run. Not copyable; reuse one per pipeline (events are created as
/// needed and kept).
class Timeline {
 public:
  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Forgets the last run's operations (keeps the events) and records the origin on `stream`.
  void start(cudaStream_t stream);
  /// Records the event before an operation; returns its index for end().
  int begin(Engine engine, int stream_index, int chunk, cudaStream_t stream);
  /// Records the event after operation `index`.
  void end(int index, cudaStream_t stream);
  /// The spans, after the GPU has passed every event (synchronize first).
  std::vector<Span> spans() const;

 private:
  struct Op {
    Engine engine;
    int stream;
    int chunk;
  };
  cudaEvent_t event(std::size_t i);
  std::vector<course::Event> events_;  // origin, then begin/end pairs
  std::vector<Op> ops_;
};

/// What a timeline says about overlap.
struct Overlap {
  double wall_ms = 0;         ///< first start to last end
  double sum_ms = 0;          ///< every operation's duration added: the time with no overlap at all
  double busy_ms[3] = {};     ///< per engine: the union of its operations' intervals
  double overlap_pct = 0;     ///< 100 (1 − wall / sum): how much of the serial time was hidden
  double bottleneck_pct = 0;  ///< 100 max(busy) / wall: how busy the busiest engine kept
};
Overlap overlap_of(const std::vector<Span>& spans);

}  // namespace ch09
