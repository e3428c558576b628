// Generated from solutions/09_streams/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 09 — streams and overlap: host data in chunks, the copy of one chunk under the kernel
// of another.
//
// Issue orders (ch09::versions(); one with `09_streams --kernel NAME`, all with `09_streams`):
//   speed_of_light not a dot: x and y whole in, one copy each; no kernel, no result  09_streams --kernel speed_of_light
//                  (the floor every order is held to; it runs beside any --kernel)
//   serial         everything in, one kernel, everything out: no chunks, no overlap  09_streams --kernel serial
//   one_stream     chunks, all on one stream: still no overlap (a stream is a queue) 09_streams --kernel one_stream
//   depth_first    chunk k on stream k % S, its copy in, kernel and copy out          09_streams --kernel depth_first
//   breadth_first  S chunks at a time: all copies in, then all kernels, then all      09_streams --kernel breadth_first
//                  copies out, across the streams (exercise 1)
//   graph          depth_first captured once as a CUDA graph, then replayed          09_streams --kernel graph
//
// The dot's chunks leave one partial per block; the host adds them in a fixed order
// (combine_partials, exercise 2), so the result is the same bits whatever the schedule.

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "course/check.hpp"
#include "course/kernels/two_pass.cuh"
#include "course/pinned.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace ch09 {
namespace {

constexpr int kBlock = 256;

// One chunk of the dot is the kit's first pass (course::kernels::dot_partials): a grid-stride loop
// and a block reduction; one partial per block, no atomics (chapter 05's two-level reduction).

// [book_kernel]
// The kernel of "CUDA by Example" (Sanders & Kandrot, 2010), chapter 10, as the original computes
// it: the average of three neighbours of a and of b, averaged. Its neighbours wrap within the first
// 256 elements of the chunk (the book's `% 256`); kept, so the results compare with the book's.
__global__ void book_chunk(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           std::size_t n) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) {
    const std::size_t wrap = n < 256 ? n : 256;
    const std::size_t idx1 = (idx + 1) % wrap;
    const std::size_t idx2 = (idx + 2) % wrap;
    const float as = (a[idx] + a[idx1] + a[idx2]) / 3.0f;
    const float bs = (b[idx] + b[idx1] + b[idx2]) / 3.0f;
    c[idx] = (as + bs) / 2;
  }
}
// [book_kernel]

}  // namespace

std::size_t chunk_count(const Job& job) { return job.chunk == 0 ? 0 : (job.n + job.chunk - 1) / job.chunk; }

Pipeline::Pipeline(course::Context& ctx, std::size_t n_max, std::size_t max_chunks)
    : ctx_(ctx), n_max_(n_max), max_chunks_(max_chunks),
      partial_stride_(static_cast<std::size_t>(ctx.facts().sm_count) * 8) {
  ctx_.activate();
  course::require_fits(3 * n_max * sizeof(float) + max_chunks * partial_stride_ * sizeof(float),
                       "the pipeline's device buffers for n = " + std::to_string(n_max));
  d_x_ = course::DeviceBuffer<float>(n_max);
  d_y_ = course::DeviceBuffer<float>(n_max);
  d_out_ = course::DeviceBuffer<float>(n_max);
  d_partials_ = course::DeviceBuffer<float>(max_chunks * partial_stride_);
  h_partials_ = course::PinnedBuffer<float>(max_chunks * partial_stride_);
  streams_[0] = ctx_.stream();
  own_streams_.reserve(kMaxStreams - 1);
  for (int s = 1; s < kMaxStreams; ++s) streams_[s] = own_streams_.emplace_back(cudaStreamNonBlocking);
  fork_.emplace(cudaEventDisableTiming);
  joins_.reserve(kMaxStreams);
  for (int s = 0; s < kMaxStreams; ++s) joins_.emplace_back(cudaEventDisableTiming);
}

Pipeline::~Pipeline() {
  cudaSetDevice(ctx_.device());
  for (int s = 0; s < kMaxStreams; ++s)
    if (streams_[s] != nullptr) cudaStreamSynchronize(streams_[s]);
  for (auto& g : graphs_) cudaGraphExecDestroy(g.exec);
  // The streams and events are destroyed with their owners.
}

int dot_blocks(std::size_t len, std::size_t stride) {
  return static_cast<int>(std::max<std::size_t>(1, std::min(stride, (len + kBlock - 1) / kBlock)));
}

int Pipeline::dot_grid(std::size_t len) const { return dot_blocks(len, partial_stride_); }

void Pipeline::validate(const Job& job) const {
  if (job.n > n_max_)
    throw course::UsageError("pipeline: n = " + std::to_string(job.n) + " exceeds the n_max of " + std::to_string(n_max_) +
                             " it was made for");
  if (job.chunk == 0) throw course::UsageError("pipeline: chunk must be at least 1 element");
  if (job.streams < 1 || job.streams > kMaxStreams)
    throw course::UsageError("pipeline: streams must be 1.." + std::to_string(kMaxStreams) + ", not " +
                             std::to_string(job.streams));
  if (chunk_count(job) > max_chunks_)
    throw course::UsageError("pipeline: " + std::to_string(chunk_count(job)) + " chunks, more than the " +
                             std::to_string(max_chunks_) + " it was made for (use larger chunks)");
  if (job.n == 0) return;
  course::require_pinned(job.h_x, "pipeline input x");
  course::require_pinned(job.h_y, "pipeline input y");
  if (job.problem == Problem::book) course::require_pinned(job.h_out, "pipeline output");
}

// [chunk_ops]
void Pipeline::copy_in(const Job& job, std::size_t k, int s) {
  const std::size_t at = k * job.chunk, len = std::min(job.chunk, job.n - at);
  const int op = timeline ? timeline->begin(Engine::h2d, s, static_cast<int>(k), stream(s)) : -1;
  CUDA_CHECK(cudaMemcpyAsync(d_x_.data() + at, job.h_x + at, len * sizeof(float), cudaMemcpyHostToDevice, stream(s)));
  CUDA_CHECK(cudaMemcpyAsync(d_y_.data() + at, job.h_y + at, len * sizeof(float), cudaMemcpyHostToDevice, stream(s)));
  if (timeline) timeline->end(op, stream(s));
}

void Pipeline::compute(const Job& job, std::size_t k, int s) {
  const std::size_t at = k * job.chunk, len = std::min(job.chunk, job.n - at);
  const int op = timeline ? timeline->begin(Engine::kernel, s, static_cast<int>(k), stream(s)) : -1;
  if (job.problem == Problem::dot) {
    course::kernels::dot_partials<kBlock><<<dot_grid(len), kBlock, 0, stream(s)>>>(d_x_.data() + at, d_y_.data() + at, len,
                                                      d_partials_.data() + k * partial_stride_);
    CUDA_CHECK_LAUNCH("dot_chunk");
  } else {
    const unsigned grid = static_cast<unsigned>((len + kBlock - 1) / kBlock);
    book_chunk<<<grid, kBlock, 0, stream(s)>>>(d_x_.data() + at, d_y_.data() + at, d_out_.data() + at, len);
    CUDA_CHECK_LAUNCH("book_chunk");
  }
  if (timeline) timeline->end(op, stream(s));
}

void Pipeline::copy_out(const Job& job, std::size_t k, int s) {
  const std::size_t at = k * job.chunk, len = std::min(job.chunk, job.n - at);
  const int op = timeline ? timeline->begin(Engine::d2h, s, static_cast<int>(k), stream(s)) : -1;
  if (job.problem == Problem::dot)
    CUDA_CHECK(cudaMemcpyAsync(h_partials_.data() + k * partial_stride_, d_partials_.data() + k * partial_stride_,
                               static_cast<std::size_t>(dot_grid(len)) * sizeof(float), cudaMemcpyDeviceToHost, stream(s)));
  else
    CUDA_CHECK(cudaMemcpyAsync(job.h_out + at, d_out_.data() + at, len * sizeof(float), cudaMemcpyDeviceToHost, stream(s)));
  if (timeline) timeline->end(op, stream(s));
}
// [chunk_ops]

void Pipeline::fork(int streams) {
  CUDA_CHECK(cudaEventRecord(*fork_, stream(0)));
  for (int s = 1; s < streams; ++s) CUDA_CHECK(cudaStreamWaitEvent(stream(s), *fork_, 0));
}

void Pipeline::join(int streams) {
  for (int s = 1; s < streams; ++s) {
    CUDA_CHECK(cudaEventRecord(joins_[s], stream(s)));
    CUDA_CHECK(cudaStreamWaitEvent(stream(0), joins_[s], 0));
  }
}

cudaGraphExec_t Pipeline::graph_for(const Job& job, Issue issue) {
  for (const auto& g : graphs_)
    if (g.problem == job.problem && g.h_x == job.h_x && g.h_y == job.h_y && g.h_out == job.h_out && g.n == job.n &&
        g.chunk == job.chunk && g.streams == job.streams)
      return g.exec;
  // Capture what `issue` would enqueue, from stream 0: the fork pulls the other streams into the
  // capture and the join brings them back. Nothing runs while capturing.
  Timeline* saved = std::exchange(timeline, nullptr);  // events in a graph would need their own nodes
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream(0), cudaStreamCaptureModeThreadLocal));
  try {
    issue(*this, job);
  } catch (...) {
    cudaStreamEndCapture(stream(0), &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    timeline = saved;
    throw;
  }
  timeline = saved;
  CUDA_CHECK(cudaStreamEndCapture(stream(0), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t code = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(code);
  graphs_.push_back({job.problem, job.h_x, job.h_y, job.h_out, job.n, job.chunk, job.streams, exec});
  return exec;
}

// ---------------------------------------------------------------------------------------------
// The issue orders.

namespace {

// [speed_of_light_issue]
// Not an issue order of the dot: the floor every order is held to, timed beside them. The same 8n
// bytes cross the link the best way this chapter knows: from pinned memory, by the copy engine, x
// and y whole, one copy each on one stream (one direction of the link is full with one copy
// engine; chunks would only add latency), and nothing else: no kernel, no copy out, no result.
// Whatever an order adds to this time is what its overlap did not hide.
void issue_speed_of_light(Pipeline& p, const Job& job) {
  if (job.n == 0) return;
  Job whole = job;
  whole.chunk = job.n;
  p.copy_in(whole, 0, 0);
}
// [speed_of_light_issue]

// [serial]
// No chunks: the whole input in, one kernel, the result out. Nothing can overlap: each step needs
// all of the one before.
void issue_serial(Pipeline& p, const Job& job) {
  Job whole = job;
  whole.chunk = std::max<std::size_t>(job.n, 1);
  if (job.n == 0) return;
  p.copy_in(whole, 0, 0);
  p.compute(whole, 0, 0);
  p.copy_out(whole, 0, 0);
}
// [serial]

// [one_stream]
// Chunks, but all on one stream: a stream runs its work in order, so chunk 1's copy still waits
// for chunk 0's kernel. Chunking alone overlaps nothing.
void issue_one_stream(Pipeline& p, const Job& job) {
  for (std::size_t k = 0; k < chunk_count(job); ++k) {
    p.copy_in(job, k, 0);
    p.compute(job, k, 0);
    p.copy_out(job, k, 0);
  }
}
// [one_stream]

// [depth_first]
// Chunk k on stream k % S, all three of its operations in a row. Different streams' work may run
// at once: chunk 1's copy goes on the copy engine while chunk 0's kernel runs. On Fermi (2010) one
// hardware queue served every stream, and this order blocked itself; since Kepler each stream has
// a queue of its own (Hyper-Q), and the order of issue hardly matters.
void issue_depth_first(Pipeline& p, const Job& job) {
  p.fork(job.streams);
  for (std::size_t k = 0; k < chunk_count(job); ++k) {
    const int s = static_cast<int>(k % static_cast<std::size_t>(job.streams));
    p.copy_in(job, k, s);
    p.compute(job, k, s);
    p.copy_out(job, k, s);
  }
  p.join(job.streams);
}
// [depth_first]

// [breadth_first]
// S chunks at a time, one per stream, stage by stage: every stream's copy in, then every kernel,
// then every copy out. The order the book recommended for a card with one hardware queue. A
// template: P is the Pipeline, or a Recorder that notes each operation on the host (the tests'
// "ch09 breadth_first order: *" run this very code without a GPU).
template <class P>
void issue_breadth_first(P& p, const Job& job) {
  p.fork(job.streams);
  const std::size_t chunks = chunk_count(job), S = static_cast<std::size_t>(job.streams);
  // [hole 1 begin]
  // TODO(student): issue all `chunks` chunks breadth-first. What must hold:
  //   - every chunk gets exactly one p.copy_in, one p.compute and one p.copy_out, all three on
  //     one stream in [0, S) (a stream runs its work in the order it was issued);
  //   - the chunks go S at a time, on S different streams; within such a group every copy in
  //     is issued before any kernel, every kernel before any copy out;
  //   - chunks need not be a multiple of S, and S may be 1.
  //   Tests: "ch09 breadth_first order: *" (host only, no GPU: the operations your code issues,
  //   recorded, for many chunk and stream counts); "ch09 breadth_first: *" (the fp64 reference
  //   around the chunk size on 1 and 3 streams, the same bits in 20 runs, new input, the book's
  //   program bit for bit); the grade also times its overlap against its own engines' yardstick.
  (void)chunks;
  (void)S;
  // [hole 1 end]
  p.join(job.streams);
}
// [breadth_first]

// Stands in for a Pipeline in issue_breadth_first: notes what the order asks for, enqueues nothing.
struct Recorder {
  std::vector<Op> ops;
  void copy_in(const Job&, std::size_t k, int s) { ops.push_back({Stage::copy_in, k, s}); }
  void compute(const Job&, std::size_t k, int s) { ops.push_back({Stage::compute, k, s}); }
  void copy_out(const Job&, std::size_t k, int s) { ops.push_back({Stage::copy_out, k, s}); }
  void fork(int) {}
  void join(int) {}
};

// [graph]
// The depth-first pipeline captured once as a graph, then replayed with one launch: the CPU's
// cost of enqueueing 3 × chunks operations (a few microseconds each) is paid once, at capture.
void issue_graph(Pipeline& p, const Job& job) {
  if (chunk_count(job) == 0) return;
  CUDA_CHECK(cudaGraphLaunch(p.graph_for(job, issue_depth_first), p.stream(0)));
}
// [graph]

}  // namespace

const std::vector<course::Version<Issue>>& versions() {
  static const std::vector<course::Version<Issue>> registry = {
      {"speed_of_light", "not a dot: x and y from pinned memory to the GPU, one copy each, nothing else (the floor)",
       issue_speed_of_light},
      {"serial", "no chunks: all in, one kernel, all out (nothing overlaps)", issue_serial},
      {"one_stream", "chunks on one stream: still nothing overlaps", issue_one_stream},
      {"depth_first", "chunk k on stream k % S: copy in, kernel, copy out", issue_depth_first},
      {"breadth_first", "S chunks at a time: all copies in, all kernels, all copies out", issue_breadth_first<Pipeline>,
       true},
      {"graph", "depth_first captured once as a CUDA graph, replayed", issue_graph},
  };
  return registry;
}

std::vector<Op> breadth_first_ops(std::size_t chunks, int streams) {
  if (streams < 1 || streams > kMaxStreams)
    throw course::UsageError("breadth_first_ops: streams must be 1.." + std::to_string(kMaxStreams));
  Job job;  // one element per chunk: only the count of chunks and streams matter here
  job.n = chunks;
  job.chunk = 1;
  job.streams = streams;
  Recorder recorder;
  issue_breadth_first(recorder, job);
  return recorder.ops;
}

// [combine_partials]
// A template: P is the Pipeline, or Partials (partials anywhere in host memory: the tests'
// "ch09 combine_partials: *" run this very code without a GPU).
template <class P>
float combine_partials_of(const P& p, const Job& job) {
  double sum = 0.0;
  // [hole 2 begin]
  // TODO(student): `sum` must end as the sum of every partial the chunks' kernels left, so that:
  //   - the result is the dot within the fp64 bound for any n, chunk length and stream count
  //     (where chunk k's partials are, and how many it has: Pipeline in dot.hpp);
  //   - it has the same bits whichever stream finished first, run after run, and the same bits
  //     for every chunked issue order.
  //   Tests: "ch09 combine_partials: *" (host only, no GPU: partials laid out as the pipeline
  //   leaves them, with NaN where no kernel writes), "ch09 combine: the chunked orders agree bit
  //   for bit", and every order's "matches the fp64 reference at awkward sizes" and "the same
  //   bits on every run".
  (void)p;
  (void)job;
  // [hole 2 end]
  return static_cast<float>(sum);
}
// [combine_partials]

float combine_partials(const Pipeline& p, const Job& job) { return combine_partials_of(p, job); }
float combine_partials(const Partials& p, const Job& job) { return combine_partials_of(p, job); }

bool is_speed_of_light(const course::Version<Issue>& version) { return version.name == "speed_of_light"; }

float run(Pipeline& p, Issue issue, const Job& job) {
  p.validate(job);
  if (issue == issue_speed_of_light) {
    if (p.timeline) p.timeline->start(p.stream(0));
    issue(p, job);
    p.context().synchronize();
    return std::numeric_limits<float>::quiet_NaN();  // not a dot: no result
  }
  if (issue == issue_serial) {
    // serial runs the whole input as one chunk: its partials are chunk 0's.
    Job whole = job;
    whole.chunk = std::max<std::size_t>(job.n, 1);
    if (p.timeline) p.timeline->start(p.stream(0));
    issue(p, job);
    p.context().synchronize();
    return job.problem == Problem::dot ? combine_partials(p, whole) : 0.0f;
  }
  if (p.timeline) p.timeline->start(p.stream(0));
  issue(p, job);
  p.context().synchronize();  // stream 0 joined every other stream: all done
  return job.problem == Problem::dot ? combine_partials(p, job) : 0.0f;
}

course::Verdict check_link_floor(Pipeline& p, const Job& job) {
  course::Verdict v;
  v.got = v.expected = v.error = v.rel_error = std::numeric_limits<double>::quiet_NaN();  // no result to compare
  p.validate(job);
  const std::size_t bytes = job.n * sizeof(float);
  if (bytes > 0) {
    CUDA_CHECK(cudaMemsetAsync(p.device_x(), 0xFF, bytes, p.stream(0)));
    CUDA_CHECK(cudaMemsetAsync(p.device_y(), 0xFF, bytes, p.stream(0)));
  }
  run(p, issue_speed_of_light, job);
  // Read back on the legacy default stream, which does not wait for the pipeline's (non-blocking)
  // streams: what is read is what had landed when run() returned.
  std::vector<float> x(job.n), y(job.n);
  if (bytes > 0) {
    CUDA_CHECK(cudaMemcpy(x.data(), p.device_x(), bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(y.data(), p.device_y(), bytes, cudaMemcpyDeviceToHost));
  }
  const bool same_x = bytes == 0 || std::memcmp(x.data(), job.h_x, bytes) == 0;
  const bool same_y = bytes == 0 || std::memcmp(y.data(), job.h_y, bytes) == 0;
  v.ok = same_x && same_y;
  if (!v.ok)
    v.message = "speed_of_light at n = " + std::to_string(job.n) + ": the device copy of " + (same_x ? "y" : "x") +
                " differs from the host's when run() returns (a copy missing, short, or not waited for)";
  return v;
}

void book_reference(const float* a, const float* b, float* c, std::size_t n, std::size_t chunk) {
  for (std::size_t at = 0; at < n; at += chunk) {
    const std::size_t len = std::min(chunk, n - at), wrap = len < 256 ? len : 256;
    const float* ca = a + at;
    const float* cb = b + at;
    for (std::size_t idx = 0; idx < len; ++idx) {
      const std::size_t idx1 = (idx + 1) % wrap, idx2 = (idx + 2) % wrap;
      const float as = (ca[idx] + ca[idx1] + ca[idx2]) / 3.0f;
      const float bs = (cb[idx] + cb[idx1] + cb[idx2]) / 3.0f;
      c[at + idx] = (as + bs) / 2;
    }
  }
}

float cpu_dot(course::ThreadPool& pool, const float* x, const float* y, std::size_t n) {
  std::vector<double> part(pool.size(), 0.0);
  const std::size_t parts = pool.size();
  pool.run([&](unsigned t) {
    const std::size_t begin = n * t / parts, end = n * (t + 1) / parts;
    float acc[8] = {};
    std::size_t i = begin;
    for (; i + 8 <= end; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += x[i + j] * y[i + j];  // eight independent sums: vectorized
    float tail = 0.0f;
    for (; i < end; ++i) tail += x[i] * y[i];
    double s = tail;
    for (float a : acc) s += a;
    part[t] = s;
  });
  double sum = 0.0;
  for (double s : part) sum += s;
  return static_cast<float>(sum);
}

// [pipeline_ms]
// Exercise 3 (*think*): how long a pipeline of `chunks` chunks takes on three in-order engines.
double pipeline_ms(double h2d_ms, double kernel_ms, double d2h_ms, std::size_t chunks, double latency_us) {
  if (chunks == 0) throw course::UsageError("pipeline_ms: chunks must be at least 1");
  // [hole 3 begin]
  // TODO(student): the wall time from the first copy in to the last copy out, in ms, for the
  // model dot.hpp states above pipeline_ms. Tests: "ch09 pipeline_ms: matches an
  // operation-by-operation simulation of three engines" and "ch09 pipeline_ms: its best chunk
  // count is the simulation's".
  (void)h2d_ms, (void)kernel_ms, (void)d2h_ms, (void)latency_us;
  return -1.0;
  // [hole 3 end]
}
// [pipeline_ms]

Engines measure_engines(Pipeline& p, const Job& job) {
  p.validate(job);
  cudaStream_t s = p.stream(0);
  auto alone = [&](void (Pipeline::*op)(const Job&, std::size_t, int), const Job& j) {
    const auto samples = course::time_gpu_ms(
        [&] {
          for (std::size_t k = 0; k < chunk_count(j); ++k) (p.*op)(j, k, 0);
        },
        1, 5, s);
    return course::summarize(samples).median;
  };
  Engines e;
  e.h2d_ms = alone(&Pipeline::copy_in, job);
  e.kernel_ms = alone(&Pipeline::compute, job);
  e.d2h_ms = alone(&Pipeline::copy_out, job);
  e.chunks = chunk_count(job);
  Job one = job;  // one chunk of one float: the operation's fixed cost, its bytes negligible
  one.n = 1;
  one.chunk = 1;
  e.latency_us = 1e3 * alone(&Pipeline::copy_in, one);
  return e;
}

// [plan_pipeline]
// Exercise 4 (*design*): the pipeline's shape, chosen from this machine's measured engines.
Plan plan_pipeline(std::size_t n, const Engines& engines) {
  // [hole 4 begin]
  // TODO(student): exercise 4, design. Return the chunk size (elements, 1 to n) and the stream
  // count (1 to kMaxStreams; at most 4096 chunks) with which a job of n pinned elements finishes
  // soonest on the machine these engine times were measured on. The inputs (Engines in dot.hpp):
  // h2d_ms, kernel_ms and d2h_ms are each one engine's total time for the whole input cut into
  // engines.chunks chunks (the test measures the book's program at n = 2^25 in 16), so each already
  // holds engines.chunks operations' latency; latency_us is one operation's latency, measured
  // apart; exercise 3's pipeline_ms takes engine times with no latency in them. What must hold: the
  // depth-first pipeline of the book's program with your plan takes at most 1.15 x the best of a
  // sweep of chunk and stream counts timed in the same test (on your own card: "ch09 plan: the
  // planned pipeline runs within 15% of the best shape measured here"; without a GPU, on synthetic
  // engine figures: "ch09 plan on synthetic engines: *"); a plan that does not fit is refused.
  (void)n;
  (void)engines;
  return Plan{};
  // [hole 4 end]
}
// [plan_pipeline]

}  // namespace ch09
