// Generated from solutions/11_multi_gpu/dot.hpp by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
#pragma once
/// \file
/// \brief Chapter 11: the dot product on many GPUs. Each GPU owns a slice of x and y, computes its
/// partial with the course's final kernel (chapter 06's version 12), and NCCL combines the partials.
///
/// Two ways to start the same code: one process drives every GPU of the host (ncclCommInitAll,
/// collectives inside ncclGroupStart/End), or one process per GPU started by mpirun (the NCCL unique
/// id shared over MPI, ncclCommInitRank). Both build a Team: the GPUs this process drives, their
/// communicators, and the number of ranks in all. With one GPU the Team is a communicator of one
/// and runs the same code path.

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE
#include "course/reference.hpp"
#include "course/registry.hpp"
#include "course/stream.hpp"

namespace ch11 {

/// A failing NCCL call: the call as text, file, line and NCCL's message.
class NcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
void check_nccl(ncclResult_t code, const char* call, const char* file, int line);
#define NCCL_CHECK(call) ::ch11::check_nccl((call), #call, __FILE__, __LINE__)

/// An NCCL group that is always closed: ncclGroupStart() on construction, end() closes it and checks
/// the result; a group left open by an exception is closed (its result ignored) on destruction, so
/// a failed call inside it does not leave the thread inside a group for ever.
class NcclGroup {
 public:
  NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  ~NcclGroup();
  void end();  ///< ncclGroupEnd(), checked: the collectives of the group are enqueued here

 private:
  bool open_ = false;
};

/// NcclGroup's rule for any maker of the calls (NCCL itself in dot.cu, a recorder in a host test):
/// group_start() on construction, end() closes the group (group_end(), whose failure throws); a group
/// left open by an exception is closed on destruction, its failure ignored.
template <class Calls>
class GroupOf {
 public:
  explicit GroupOf(Calls& calls) : calls_(calls) {
    calls_.group_start();
    open_ = true;
  }
  GroupOf(const GroupOf&) = delete;
  GroupOf& operator=(const GroupOf&) = delete;
  ~GroupOf() {
    if (!open_) return;
    try {
      calls_.group_end();
    } catch (...) {  // unwinding already: the first failure is the one reported
    }
  }
  void end() {
    open_ = false;
    calls_.group_end();
  }

 private:
  Calls& calls_;
  bool open_ = false;
};

/// What the all-gather of exercise 2 works on, for one GPU of the team: its partial (1 float, on
/// the GPU), where every rank's partial goes (ranks floats, rank order), its communicator and its
/// stream.
struct GatherSide {
  const float* partial = nullptr;
  float* gathered = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

/// The NCCL calls of exercise 2 as the exercise (gather_partials in dot.cu) sees them: the allgather
/// combine makes them with NCCL itself (no virtual call); a host test implements this interface with
/// a recorder and runs the same code through on_host::gather_partials, without a GPU or NCCL.
class GatherCalls {
 public:
  virtual ~GatherCalls() = default;
  virtual void group_start() = 0;  ///< ncclGroupStart()
  virtual void group_end() = 0;    ///< ncclGroupEnd(), checked: the group's collectives are enqueued here
  /// ncclAllGather(send, recv, count, ncclFloat, comm, stream), checked (throws NcclError): every rank
  /// of comm sends `count` floats, and rank r's land at recv + r * count on every rank.
  virtual void all_gather(const float* send, float* recv, std::size_t count, ncclComm_t comm, cudaStream_t stream) = 0;
};

namespace on_host {
/// The exercise's all-gather (gather_partials, dot.cu) through `calls`, for the GPUs of this process
/// `sides` (gpus order: ranks first_rank, first_rank + 1, ...).
void gather_partials(GatherCalls& calls, const std::vector<GatherSide>& sides);
}  // namespace on_host

/// The GPUs of a team cannot write into each other's memory (the p2p combine needs peer access).
class NoPeerAccess : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the partial kernel needs to combine the partials itself (version "p2p"); ranks == 0: it
/// does not. inboxes: a device array of `ranks` pointers, inboxes[r] the inbox on rank r's GPU.
struct PeerCombine {
  unsigned long long* const* inboxes = nullptr;
  int rank = 0;
  int ranks = 0;
  unsigned tag = 0;                    ///< this call's number, the same on every rank, never 0
  float* result = nullptr;             ///< the dot, on this GPU
  unsigned long long* host_word = nullptr;  ///< and in pinned host memory, tagged (may be null)
  unsigned long long* clock = nullptr; ///< two GPU clock stamps (ns): partial done, result written
};

/// Sets NCCL_NVLS_ENABLE=0 in this process's environment (NVLink multicast off; the shared
/// machines require it). Every function that creates a communicator calls it first.
void disable_nvls();

/// The part [begin, begin + count) of n elements that rank `rank` of `ranks` owns.
struct Slice {
  std::size_t begin = 0;
  std::size_t count = 0;
};

/// Contiguous slices in rank order that cover [0, n) exactly once, sizes differing by at most one
/// (the first n % ranks ranks get one more). n < ranks leaves the last ranks empty. Throws
/// UsageError for ranks < 1 or rank outside [0, ranks).
Slice slice_of(std::size_t n, int ranks, int rank);

/// Largest slice any rank gets for n elements over `ranks`.
std::size_t max_slice(std::size_t n, int ranks);

/// One GPU's state: its context, its slice of x and y (capacity fixed at construction), the
/// tagged slots of the partial kernel, its partial, the gathered partials, and the result.
class Gpu {
 public:
  /// Buffers for slices of up to `capacity` elements and teams of up to `max_ranks` ranks.
  Gpu(int device, std::size_t capacity, int max_ranks);
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  course::Context& context() { return ctx_; }
  std::size_t capacity() const { return capacity_; }
  int max_ranks() const { return max_ranks_; }
  float* x() { return d_x_.data(); }
  float* y() { return d_y_.data(); }
  float* partial() { return d_small_.data(); }                  ///< this GPU's partial (1 float)
  float* result() { return d_small_.data() + 1; }               ///< the combined dot (1 float)
  float* gathered() { return d_small_.data() + kGatherOffset; }  ///< every rank's partial, rank order
  float* host_partials() { return h_partials_.data(); }         ///< pinned, max_ranks floats

  /// Launches the partial kernel over the first `count` elements of the slice into `out`
  /// (default partial(); a mapped pinned host slot works too: the device writes it directly).
  /// Each launch is one call: count_call() first.
  void launch_partial(std::size_t count, float* out = nullptr, const PeerCombine& peers = {});
  /// Counts one call of the partial kernel (eager or replayed); every 2^32 - 2 calls clears the
  /// tagged slots and the epoch on the stream, before the tag could wrap.
  void count_call();
  /// The speed-of-light row's work on this GPU: the kit's read-only kernel (course/kernels/
  /// read_floor.cuh, chapter 06's) over the first `count` elements of the slice, on the partial
  /// kernel's grid shape, its one value stored into `out` (device or mapped pinned memory). No
  /// partial, no tag, no combine.
  void launch_floor(std::size_t count, float* out);
  /// Three timing events (start, kernel end, combine end), made once: the split of a call
  /// records them instead of creating events on every call.
  cudaEvent_t event(int i) const { return events_[i]; }
  /// Fills the partial, the gathered partials and the result with NaN (tests: a step that does
  /// not write its output cannot pass with an old value).
  void poison();

  static constexpr std::size_t kGatherOffset = 4;  // 16-byte aligned, after partial and result

 private:
  course::Context ctx_;
  std::size_t capacity_;
  int max_ranks_;
  int grid_ = 1;
  int floor_grid_ = 1;  // resident blocks of the read-only kernel (launch_floor)
  unsigned calls_ = 0;
  course::Event events_[3];  // made on this device: ctx_, constructed first, selected it
  course::DeviceBuffer<float> d_x_, d_y_, d_small_;
  course::DeviceBuffer<unsigned long long> d_tagged_;
  course::DeviceBuffer<unsigned> d_epoch_;  // the tag of the last call (partial_kernel)
  course::PinnedBuffer<float> h_partials_;
};

/// The GPUs this process drives and their communicators. `first_rank` is the rank of gpus[0]; the
/// others follow it. In one process: every rank. Under MPI: one GPU, first_rank = the MPI rank.
struct Team {
  /// A CUDA graph per GPU of the team, made once from a combine and replayed (see replay_graph).
  struct GraphExecDeleter {
    void operator()(cudaGraphExec_t g) const noexcept { cudaGraphExecDestroy(g); }
  };
  using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

  std::vector<Gpu*> gpus;
  std::vector<ncclComm_t> comms;
  int first_rank = 0;
  int ranks = 0;
  /// The host combine across processes: gathers `mine` (this process's partials, in rank order)
  /// from every process into `all` (ranks floats). Empty in one process, where there is nothing to
  /// exchange; the MPI driver sets it to MPI_Allgather.
  std::function<void(const float* mine, int count, float* all)> host_allgather;
  /// The graphs captured so far, one list (a graph per GPU, gpus order) per combine.
  std::vector<std::pair<void (*)(Team&), std::vector<GraphExec>>> graphs;
  /// The whole calls captured by dot() for allgather_graph, one list per n (the latest 16).
  std::vector<std::pair<std::size_t, std::vector<GraphExec>>> call_graphs;
  /// The p2p combine's inboxes and tag, made on its first use (dot.cu).
  struct PeerState;
  std::unique_ptr<PeerState> peers;
  /// p2p: launch every GPU's kernel from its own host thread, all at once (true), or one after
  /// the other from the calling thread (false: the driver measures what the threads save).
  bool threaded_launch = true;

  Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  Team(Team&& o) noexcept;
  Team& operator=(Team&& o) noexcept;
  ~Team();  ///< destroys the graphs, then the communicators
};

/// A team over gpus[0, count) of this process, one communicator each (ncclCommInitAll).
Team make_local_team(const std::vector<std::unique_ptr<Gpu>>& gpus, int count);

/// A team of one GPU as rank `rank` of `ranks`, joining the communicator named by `id`
/// (ncclCommInitRank; every rank must call it with the same id).
Team make_rank_team(Gpu& gpu, const ncclUniqueId& id, int rank, int ranks);

/// A combine: enqueues on every GPU of the team what turns partial() into result().
using Combine = void (*)(Team& team);

/// Enqueues `eager` through CUDA graphs: on first use for this team, captures what `eager` enqueues
/// on every GPU's stream (one graph per GPU, all captured at once, as NCCL requires of a group);
/// then, and on every later call, launches each GPU's graph on its stream. One launch per GPU
/// replaces NCCL's host work and the combine kernel's launch. `eager` must enqueue stream work
/// only (no host waits): the "host" combine cannot be captured.
void replay_graph(Team& team, Combine eager);

/// Captures what `enqueue` puts on every GPU's stream of the team into one graph per GPU (gpus
/// order). Every stream is captured at once; a failure ends every capture and throws.
std::vector<Team::GraphExec> capture(Team& team, const std::function<void()>& enqueue);

/// The chapter's registry: the floor (speed_of_light) first, then the ways to combine the partials.
const std::vector<course::Version<Combine>>& versions();

/// True for the speed-of-light row: not a combine but the floor every combine is held to, timed
/// beside them. dot() with it has every GPU read its own slice at once with the best access pattern
/// (Gpu::launch_floor), launched as the eager combines launch their partial kernels, and nothing
/// else: no partial, no combine. Each GPU's one value lands in pinned host memory and dot() returns
/// them once every GPU's stream is done; they are not the dot (the driver and the tests check only
/// that each is written, finite from finite inputs). It runs beside any --kernel, and in the MPI
/// form too (it needs no other process).
bool is_speed_of_light(const course::Version<Combine>& v);

/// False for a combine that needs one process to drive every rank (p2p: its stores into another
/// GPU's memory need that GPU in this process): the MPI form leaves it out.
bool across_processes(const course::Version<Combine>& v);

/// Fills each GPU's slice of the n-element inputs with values random_vector(n, seed) and
/// random_vector(n, course::seed_y(seed)) would hold at those indices (generated on the GPU). Asynchronous.
void fill_slices(Team& team, std::size_t n, std::uint64_t seed);

/// Copies each GPU's slice of host x and y (n elements) to it, every GPU over its own link at the
/// same time (pinned host memory makes the copies asynchronous). Asynchronous.
void upload_slices(Team& team, const float* h_x, const float* h_y, std::size_t n);

/// Times of one call, split (milliseconds, the slowest GPU's; CUDA events on each GPU's stream).
struct Split {
  double kernel_ms = 0;   ///< the partial kernel
  double combine_ms = 0;  ///< from the kernel's end to the result (waits for the slowest rank too)
};

/// Runs the dot of the n-element inputs already in the slices: every GPU's partial, then the
/// combine. Waits, and returns the result every local GPU holds (gpus order). Throws UsageError
/// when n does not fit the team's buffers. With `split`, times the parts with events. With the
/// speed-of-light row (is_speed_of_light) it returns each GPU's one written value instead, not a
/// dot; its split is all kernel.
std::vector<float> dot(Team& team, Combine combine, std::size_t n, Split* split = nullptr);

/// The best one GPU can do alone, for the crossover with many: the partial kernel over the first n
/// elements of its slice buffers, storing its partial straight into pinned host memory, no combine
/// at all. Waits for that store (as dot() waits for p2p's), and returns the dot.
float single_gpu_dot(Gpu& gpu, std::size_t n, Split* split = nullptr);

/// Enqueues work that keeps gpu's stream busy for about `us` microseconds (tests: a rank that
/// finishes last must not change the result).
void delay(Gpu& gpu, double us);

/// The fp64 reference of random_vector(n, seed) · random_vector(n, course::seed_y(seed)), generated on the
/// host without storing the vectors (course::reference_dot_from_seeds: for sizes that do not fit a test).
course::Reference reference_from_seed(std::size_t n, std::uint64_t seed);

/// The most partials the pairwise combine adds at once: teams of up to 1024 ranks.
constexpr int kMaxPartials = 1024;

/// Enqueues the combine kernel over `count` device floats at d_partials (one block adds them
/// pairwise, add_pairwise below), writing d_result, on gpu's stream. The tests feed it many partials,
/// not just one per GPU here. Throws UsageError for count outside [0, kMaxPartials].
void launch_combine(Gpu& gpu, const float* d_partials, int count, float* d_result);

// [pairwise]
/// Exercise 3 (*design*): the deterministic combine's order. Every combine that fixes the order of
/// the additions (allgather, allgather_graph, p2p, host) adds the partials with this one function,
/// on every GPU; the tests hold each of them to the order below, bit for bit.
///
/// The order (the pairwise rule): level 0 is the `count` partials in rank order. The next level
/// pairs neighbours, (0, 1), (2, 3), ..., each pair added left + right; a level with an odd number
/// of values has no neighbour for its last one, which is carried up unchanged. Levels follow until
/// one value is left: that value is the sum. Five partials a..e give ((a + b) + (c + d)) + e.
///
/// The values live in the caller's memory, work[0, count) (on the GPU, shared memory: combine_kernel
/// and the p2p combine in dot.cu), and this function only decides who adds what, when: add(to,
/// from) does work[to] += work[from], and barrier() returns once every thread has called it (on
/// the GPU __syncthreads()). `threads` threads call the function at once, each with its own
/// `thread` in [0, threads) and the same count (0 <= count <= kMaxPartials). What must hold once
/// every thread has returned: work[0] is the sum in the pairwise order, bit for bit (count 0 and 1:
/// nothing to add; the caller reads work[0] only when count > 0). Every add names indices in [0,
/// count). Between two barriers no value is written by one add and read or written by another
/// (the threads run in any order); every thread calls barrier() equally often, and after its last
/// add. The threads share the work: the additions of a level are independent, so each level is
/// one step between barriers, its adds spread evenly over the threads (at most ceil(adds /
/// threads) each), about log2(count) steps in all where one thread alone would need count - 1.
template <class Add, class Barrier>
COURSE_HOST_DEVICE void add_pairwise(int count, int thread, int threads, Add add, Barrier barrier) {
  // [hole 1 begin]
  // TODO(student): exercise 3, design: write this function from the contract above (the order,
  // what add and barrier do, what must hold between barriers and at the end). Tests: "ch11
  // pairwise: *" runs it without a GPU (host threads simulated, counts 0 to 1024, 1 to 512
  // threads: the sum's bits, indices, races, barriers, steps, shares); "ch11 pairwise gpu: *" on
  // one block of the GPU (counts 0, 1, 2, 3, 5, 8, 1000, 1024).
  (void)count;
  (void)thread;
  (void)threads;
  (void)add;
  (void)barrier;
  // [hole 1 end]
}
// [pairwise]

}  // namespace ch11
