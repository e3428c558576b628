#pragma once
/// \file
/// \brief Chapter 09: streams and overlap. Host data in chunks: the copy of one chunk overlaps the
/// kernel of another.
///
/// A Job is host data (pinned) cut into chunks; a Pipeline is the per-device state that runs it
/// (the context's stream and up to kMaxStreams more, device buffers for n_max, per-chunk partial
/// sums, the captured graph). An issue order (a registry entry) decides in which order and on
/// which streams each chunk's three operations are enqueued: copy in, compute, copy out.

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/reference.hpp"
#include "course/registry.hpp"
#include "course/stream.hpp"
#include "course/thread_pool.hpp"
#include "timeline.hpp"

namespace ch09 {

/// Streams a pipeline may use (the sweep goes from 1 to 16).
constexpr int kMaxStreams = 16;

/// What each chunk computes.
enum class Problem {
  dot,   ///< partial sums of x·y per chunk, combined on the host in a fixed order
  book,  ///< "CUDA by Example" ch. 10: c[i] = (avg of a[i], a[i+1], a[i+2] + same of b) / 2
};

/// One run: pinned host inputs x, y of n floats, cut into chunks of `chunk` elements.
struct Job {
  Problem problem = Problem::dot;
  const float* h_x = nullptr;  ///< pinned
  const float* h_y = nullptr;  ///< pinned
  float* h_out = nullptr;      ///< book: n floats, pinned (dot: unused, the result is returned)
  std::size_t n = 0;
  std::size_t chunk = 1 << 20;
  int streams = 2;
};

/// Chunks of a job: ceil(n / chunk).
std::size_t chunk_count(const Job& job);

/// Blocks of the dot kernel for a chunk of `len` elements when a chunk's partials are `stride`
/// floats apart: one per 256 elements, at least 1, at most stride. Pipeline::dot_grid is this.
int dot_blocks(std::size_t len, std::size_t stride);

/// One operation of an issue order: which of a chunk's three operations, on which stream.
enum class Stage { copy_in, compute, copy_out };
struct Op {
  Stage stage;
  std::size_t chunk;
  int stream;
};

/// Exercise 1 without a GPU: the operations the breadth-first order (issue_breadth_first, the
/// exercise's own code) issues for `chunks` chunks on `streams` streams, in the order it issues
/// them, recorded on the host instead of enqueued. "ch09 breadth_first order: *" checks them.
std::vector<Op> breadth_first_ops(std::size_t chunks, int streams);

/// Where the pipeline's kernels leave the partials, as combine_partials reads them: chunk k's
/// dot_blocks(len_k, stride) partials at partials + k * stride (len_k its number of elements).
struct Partials {
  const float* partials = nullptr;
  std::size_t stride = 0;
  std::size_t partial_stride() const { return stride; }
  const float* host_partials() const { return partials; }
  int dot_grid(std::size_t len) const { return dot_blocks(len, stride); }
};

/// The per-device state of the pipelines.
class Pipeline {
 public:
  /// Device buffers for up to `n_max` elements and partials for up to `max_chunks` chunks.
  Pipeline(course::Context& ctx, std::size_t n_max, std::size_t max_chunks = 4096);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  course::Context& context() { return ctx_; }
  /// Stream i: 0 is the context's stream, 1..kMaxStreams-1 the pipeline's own.
  cudaStream_t stream(int i) const { return streams_[static_cast<std::size_t>(i)]; }
  /// Blocks of the dot kernel for a chunk of `len` elements (fixed for a given len: determinism).
  int dot_grid(std::size_t len) const;
  /// Floats between the partials of chunk k and k+1.
  std::size_t partial_stride() const { return partial_stride_; }
  /// The partial sums copied back, chunk k's at k * partial_stride() (pinned host memory).
  const float* host_partials() const { return h_partials_.data(); }
  /// Throws UsageError when the job does not fit this pipeline or its host memory is not pinned.
  void validate(const Job& job) const;
  /// The device buffers the copies in fill (n_max floats each): x's and y's.
  float* device_x() { return d_x_.data(); }
  float* device_y() { return d_y_.data(); }

  /// When set, every operation is bracketed by events (see timeline.hpp).
  Timeline* timeline = nullptr;

  // The three operations of chunk k on stream s (s < job.streams), and the fork and join that
  // let streams 1.. start after the work already on stream 0, and stream 0 wait for them at the end.
  void copy_in(const Job& job, std::size_t k, int s);
  void compute(const Job& job, std::size_t k, int s);
  void copy_out(const Job& job, std::size_t k, int s);
  void fork(int streams);
  void join(int streams);

  /// The captured graph for `job`'s shape, captured on first use with `issue`, then replayed.
  cudaGraphExec_t graph_for(const Job& job, void (*issue)(Pipeline&, const Job&));

 private:
  course::Context& ctx_;
  std::size_t n_max_, max_chunks_, partial_stride_;
  // Owners, made in the constructor's body once the device is current, so that a constructor that
  // throws half way frees what it made; streams_ is the view the operations use.
  std::vector<course::Stream> own_streams_;  // streams 1..kMaxStreams-1
  cudaStream_t streams_[kMaxStreams] = {};   // stream 0 is the context's
  std::optional<course::Event> fork_;
  std::vector<course::Event> joins_;         // one per stream
  course::DeviceBuffer<float> d_x_, d_y_, d_out_, d_partials_;
  course::PinnedBuffer<float> h_partials_;
  struct Graph {
    Problem problem;
    const float* h_x;
    const float* h_y;
    float* h_out;
    std::size_t n, chunk;
    int streams;
    cudaGraphExec_t exec;
  };
  std::vector<Graph> graphs_;
};

/// An issue order: enqueues every operation of the job (returns before they run).
using Issue = void (*)(Pipeline& p, const Job& job);

/// The chapter's registry: the floor (speed_of_light) first, then the issue orders in the order the
/// text tells them.
const std::vector<course::Version<Issue>>& versions();

/// True for the speed-of-light row: not an issue order of the dot but the floor every order is held
/// to, timed beside them. It issues the copy in of x and y whole (from pinned memory by the copy
/// engine, one copy each, on stream 0, whatever job.chunk and job.streams say), and nothing else:
/// no kernel, no copy out, no result (run() returns NaN). The driver and the tests check the bytes
/// it moved (check_link_floor), never a result; it runs beside any --kernel. It is the floor of the
/// dot only: the book's program also copies its output back.
bool is_speed_of_light(const course::Version<Issue>& version);

/// The check of the speed-of-light row on `job` (pinned x and y): fills the device buffers' first
/// job.n floats with NaN on stream 0, runs the row (run()), then reads them back without waiting for
/// any of the pipeline's streams (a row that returned before its copies landed shows the poison) and
/// compares them with job.h_x and job.h_y bit for bit. ok when every byte moved; rel_error is NaN (no
/// result to compare). Throws UsageError for a job the pipeline refuses.
course::Verdict check_link_floor(Pipeline& p, const Job& job);

/// Runs `issue` on the job, waits, and returns the dot (combined in a fixed order), or 0 for the
/// book problem (whose result is in job.h_out), or NaN for the speed-of-light row (no result).
float run(Pipeline& p, Issue issue, const Job& job);

/// The dot from the partials the last run copied back: chunk by chunk, block by block, in that
/// fixed order, so the result does not depend on which stream finished first.
float combine_partials(const Pipeline& p, const Job& job);
/// The same combine (exercise 2's code) over partials laid out as a pipeline leaves them, anywhere
/// in host memory: "ch09 combine_partials: *" checks it without a GPU.
float combine_partials(const Partials& p, const Job& job);

/// The book's kernel on the host, for one chunk (the tests' and the driver's reference).
void book_reference(const float* a, const float* b, float* c, std::size_t n, std::size_t chunk);

/// The CPU's answer: x·y with every thread of `pool` (chapter 02's best approach: each thread a
/// contiguous slice, several float accumulators, the slices' sums added in a fixed order).
float cpu_dot(course::ThreadPool& pool, const float* x, const float* y, std::size_t n);

/// Exercise 3 (*think*): the predicted wall time of a chunked pipeline, host only. h2d_ms,
/// kernel_ms and d2h_ms are its three engines' times for the whole input's bytes, with no
/// operation's latency in them; cut into `chunks` equal chunks, each operation costs latency_us µs
/// plus its engine's time / chunks. Each engine takes the chunks in order, one at a time; a chunk's
/// kernel starts once its copy in is done, its copy out once its kernel is done, and no engine
/// waits for a free stream. Milliseconds from the first copy in to the last copy out. Throws
/// UsageError for chunks 0.
double pipeline_ms(double h2d_ms, double kernel_ms, double d2h_ms, std::size_t chunks, double latency_us);

/// What a pipeline is planned from, measured on this machine for one job (measure_engines): each
/// engine alone over the whole input cut into `chunks` chunks, and one operation's fixed cost.
/// Unlike pipeline_ms's engine times, each of the three is `chunks` operations one after another,
/// so it holds `chunks` operations' fixed cost besides the bytes.
struct Engines {
  double h2d_ms = 0;       ///< every chunk's copy in (x and y), one after another on one stream
  double kernel_ms = 0;    ///< every chunk's kernel, the same way
  double d2h_ms = 0;       ///< every chunk's copy out, the same way
  std::size_t chunks = 0;  ///< how many chunks (operations per engine) the three times above hold
  double latency_us = 0;   ///< one copy in of one float: what an operation costs beyond its bytes
};

/// A pipeline's shape: the chunk size (elements) and the number of streams.
struct Plan {
  std::size_t chunk = 0;
  int streams = 0;
};

/// Each engine alone over job's chunks, event-timed (median of a few runs), with chunks =
/// chunk_count(job), and the cost of an operation that moves one float. Needs the job's inputs
/// pinned and on p's device's host.
Engines measure_engines(Pipeline& p, const Job& job);

/// Exercise 4 (*design*): the chunk size and stream count for a job of n elements on these
/// engines, so that the pipeline finishes as early as this machine allows (see the stub).
Plan plan_pipeline(std::size_t n, const Engines& engines);

}  // namespace ch09
