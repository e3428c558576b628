// Generated from solutions/11_multi_gpu/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 11 — the dot product on many GPUs with NCCL.
//
// Versions (ch11::versions(), the ways to combine the per-GPU partials; 11_multi_gpu --list):
//   speed_of_light  not a dot: every GPU reads its slice at once (the kit's read-only kernel), no combine  11_multi_gpu --kernel speed_of_light
//              (the floor every combine is held to; it runs beside any --kernel)
//   allgather  ncclAllGather of the partials, added pairwise on every GPU (exercises 2, 3)  11_multi_gpu --kernel allgather
//   allgather_graph  the allgather combine captured once into a CUDA graph per GPU, replayed  11_multi_gpu --kernel allgather_graph
//   allreduce  ncclAllReduce(sum): NCCL's order, which depends on its algorithm and topology 11_multi_gpu --kernel allreduce
//   p2p        each GPU's kernel stores its tagged partial into every GPU's memory; no NCCL    11_multi_gpu --kernel p2p
//   host       partials gathered through the host, copied back, added pairwise on each GPU  11_multi_gpu --kernel host
// Every version runs the same partial kernel on each GPU first: chapter 06's version 12, copied
// here (a chapter depends only on common/), and every version but allreduce adds the partials with
// the same function, add_pairwise (dot.hpp, exercise 3). The same code runs under MPI: 11_multi_gpu_mpi.
// The speed-of-light row runs the kit's read-only kernel instead (course/kernels/read_floor.cuh).

#include <cuda/atomic>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "course/check.hpp"
#include "course/kernels/read_floor.cuh"
#include "course/kernels/tagged_pass.cuh"
#include "course/kernels/vec4_dot.cuh"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/thread_pool.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace ch11 {

void check_nccl(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess) return;
  throw NcclError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  ncclGetErrorString(code) + " (NCCL " + std::to_string(NCCL_MAJOR) + "." +
                  std::to_string(NCCL_MINOR) + "; NCCL_DEBUG=WARN says more)");
}

void disable_nvls() { setenv("NCCL_NVLS_ENABLE", "0", 1); }

NcclGroup::NcclGroup() {
  NCCL_CHECK(ncclGroupStart());
  open_ = true;
}

void NcclGroup::end() {
  open_ = false;
  NCCL_CHECK(ncclGroupEnd());
}

NcclGroup::~NcclGroup() {
  if (open_) ncclGroupEnd();  // unwinding from a failed call inside the group: close it, result ignored
}

// [slice_of]
// Rank r of R owns a contiguous slice; the n % R left over go one each to the first ranks, so
// slices differ by at most one element and no rank is idle while another has two extra.
Slice slice_of(std::size_t n, int ranks, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw course::UsageError("slice_of: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                             " ranks (need ranks >= 1 and 0 <= rank < ranks)");
  // [hole 1 begin]
  // TODO(student): return rank `rank`'s part of [0, n): contiguous slices in rank order that
  // cover every index exactly once, sizes differing by at most one (the first n % ranks ranks
  // get one more). Mind n < ranks (some slices are empty) and n not divisible by ranks.
  // Test: ch11 slices: * (host only).
  (void)n;
  return Slice{};
  // [hole 1 end]
}
// [slice_of]

std::size_t max_slice(std::size_t n, int ranks) { return slice_of(n, ranks, 0).count; }

namespace {

constexpr unsigned kBlock = 1024;  // chapter 06's kBlock12
constexpr int kUnroll = 2;         // chapter 06's kUnroll12

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// The partial kernel: chapter 06's version 12 (float4 grid-stride loop, warp shuffles, tagged
// partials read by the last block). Read chapter 06 for the why of every line.
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long course_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// add_pairwise's barrier on the GPU: every thread of the block.
struct BlockBarrier {
  __device__ void operator()() const { __syncthreads(); }
};

// Chapter 06's loads and block sum, from the kit (common/course/kernels/).
using course::kernels::block_sum;
using course::kernels::thread_dot_vec4;

// [partial_kernel]
// One GPU's partial: chapter 06's final kernel, with one change. Every block but the last stores
// its sum with this call's tag in one 8-byte word; the last block waits for each tag and adds the
// words in block order. Deterministic, one launch, nothing to reset. The change: the tag is not a
// launch argument but the device's own count (`epoch`, the tag of the previous call, advanced by
// the last block), so that a CUDA graph can replay the launch unchanged. Every block reads the
// epoch before it stores its word, and the last block advances it only after it has seen every
// word: no block of this call can read the advanced value.
__device__ __forceinline__ unsigned this_calls_tag(const unsigned* epoch) {
  return cuda::atomic_ref<const unsigned, cuda::thread_scope_device>(*epoch).load(cuda::memory_order_relaxed) + 1;
}

// [p2p_combine]
// Version "p2p": the combine inside the partial kernel. The last block of each GPU stores its
// partial, tagged with the call's number in one 8-byte word (chapter 06's trick, and NCCL's own
// low-latency protocol), straight into slot `rank` of every GPU's inbox over NVLink; then waits
// until its own inbox holds every rank's word of this call and adds them pairwise. No
// library launch, no host step between the kernel and the result. A word is stored and read whole,
// so the tag and the value arrive together; the host waits for every GPU before the next call, so
// no rank can overwrite a slot that another has not read yet. A rank that never arrives (its
// launch failed) ends the wait after about a second with NaN, never a hang.
constexpr int kMaxPeerRanks = 64;

__device__ void combine_over_peers(const PeerCombine& pc, float total) {
  __shared__ float s_part[kMaxPeerRanks];
  using Word = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;
  if (threadIdx.x == 0) {
    pc.clock[0] = course_globaltimer();
    const unsigned long long word = static_cast<unsigned long long>(pc.tag) << 32 | __float_as_uint(total);
    for (int r = 0; r < pc.ranks; ++r) Word(pc.inboxes[r][pc.rank]).store(word, cuda::memory_order_relaxed);
  }
  if (threadIdx.x < static_cast<unsigned>(pc.ranks)) {
    Word slot(pc.inboxes[pc.rank][threadIdx.x]);
    unsigned long long word = slot.load(cuda::memory_order_relaxed);
    for (unsigned spins = 0; static_cast<unsigned>(word >> 32) != pc.tag; ++spins) {
      if (spins > (1u << 24)) {  // about a second of 64 ns naps: the peer is not coming
        word = static_cast<unsigned long long>(pc.tag) << 32 | __float_as_uint(__int_as_float(0x7fc00000));
        break;
      }
      __nanosleep(64);
      word = slot.load(cuda::memory_order_relaxed);
    }
    s_part[threadIdx.x] = __uint_as_float(static_cast<unsigned>(word));
  }
  __syncthreads();
  // Every thread of the block takes part in the adds (exercise 3); thread 0 stores the sum.
  add_pairwise(pc.ranks, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
               [&](int to, int from) { s_part[to] += s_part[from]; }, BlockBarrier{});
  if (threadIdx.x == 0) {
    const float sum = pc.ranks > 0 ? s_part[0] : 0.0f;
    *pc.result = sum;
    if (pc.host_word) Word(*pc.host_word).store(static_cast<unsigned long long>(pc.tag) << 32 | __float_as_uint(sum),
                                                cuda::memory_order_relaxed);
    pc.clock[1] = course_globaltimer();
  }
}
// [p2p_combine]

__global__ void __launch_bounds__(kBlock, 2) partial_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                            std::size_t n, unsigned long long* tagged, unsigned* epoch,
                                                            float* __restrict__ partial, PeerCombine peers) {
  const std::size_t thread = blockIdx.x * std::size_t{kBlock} + threadIdx.x;
  float sum = block_sum<kBlock>(thread_dot_vec4<kUnroll>(x, y, n, thread, std::size_t{gridDim.x} * kBlock));
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (threadIdx.x == 0) {
      course::kernels::publish_tagged<float, 1>(tagged, blockIdx.x, this_calls_tag(epoch), sum);
    }
    return;
  }
  __shared__ unsigned s_tag;
  if (threadIdx.x == 0) s_tag = this_calls_tag(epoch);
  if (last == 0) {
    if (threadIdx.x == 0) {
      *partial = sum;
      *epoch = s_tag;
    }
    if (peers.ranks > 0) combine_over_peers(peers, sum);
    return;
  }
  __syncthreads();  // block_sum's shared memory is used again; s_tag is written
  const unsigned tag = s_tag;
  const float others = course::kernels::gather_tagged<kBlock, float, 1>(tagged, last, tag);
  if (threadIdx.x == 0) {
    *partial = others + sum;
    *epoch = tag;  // every word of this call has been read: the next call's tag is tag + 1
  }
  if (peers.ranks > 0) combine_over_peers(peers, others + sum);  // thread 0's total is the one stored
}
// [partial_kernel]

// [combine_kernel]
// The combine on one GPU: every GPU holds every rank's partial (in rank order, whatever order they
// arrived in); one block copies them into shared memory and adds them there in the pairwise order
// (add_pairwise, exercise 3: it says which thread adds what, and when). Float addition is not
// associative, but one fixed order gives one answer, on every GPU and on every run.
__global__ void combine_kernel(const float* gathered, int count, float* result) {
  __shared__ float s_work[kMaxPartials];
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) s_work[i] = gathered[i];
  __syncthreads();
  add_pairwise(count, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
               [&](int to, int from) { s_work[to] += s_work[from]; }, BlockBarrier{});
  if (threadIdx.x == 0) *result = count > 0 ? s_work[0] : 0.0f;
}

// Threads of the combine's block: a thread per pair of the first level, whole warps, 32 to 512.
unsigned combine_threads(int count) {
  const int pairs = std::max(1, count / 2);
  return static_cast<unsigned>(std::min(512, (pairs + 31) / 32 * 32));
}
// [combine_kernel]

__global__ void fill_kernel(float* out, std::size_t count, std::uint64_t seed, std::size_t begin) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = course::random_at(seed, begin + i, -1.0f, 1.0f);
}

__global__ void delay_kernel(unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) __nanosleep(1000);
}

int partial_grid(const course::DeviceFacts& facts) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, partial_kernel, kBlock, 0));
  return std::min<int>(kBlock, facts.sm_count * std::max(1, std::min(2, per_sm)));
}

// [combine_allgather]
// Version "allgather": every GPU receives every partial (ncclAllGather puts rank r's float at
// gathered()[r], whatever order they arrive in), then adds them pairwise itself. In one
// process that drives several GPUs, their calls go inside one ncclGroupStart/End: NCCL needs every
// rank's call before any can proceed, and one thread would otherwise wait for itself.
//
// Exercise 2 is gather_partials: it reaches NCCL only through `nccl` (NcclCalls below, or a host
// test's recorder: GatherCalls in dot.hpp) and the team only through side(i), GPU i's GatherSide.
template <class Calls, class Side>
void gather_partials(Calls& nccl, int gpus, Side side) {
  // [hole 2 begin]
  // TODO(student): exercise 2. Enqueue through `nccl`, for each of the `gpus` GPUs (side(i):
  // its partial, gathered, comm and stream), the collective after which every GPU holds rank r's
  // partial at gathered[r] for every rank r, whatever order they arrive in, each GPU's work on
  // its own stream. One thread drives every GPU of the team, so no call may wait for another
  // GPU's call, and a failed call must not leave NCCL half set up (read ch11::GroupOf). Checked
  // without a GPU by "ch11 allgather schedule: *" (a recorder plays NCCL: the group, the slots
  // in rank order, the count, the streams, a failing call), on the GPU by "ch11 allgather on 1
  // GPU: *" (and on 2 GPUs), and through the graph by "ch11 allgather_graph *".
  (void)nccl;
  (void)gpus;
  (void)side;
  // [hole 2 end]
}

// The calls of gather_partials as NCCL itself makes them.
struct NcclCalls {
  void group_start() { NCCL_CHECK(ncclGroupStart()); }
  void group_end() { NCCL_CHECK(ncclGroupEnd()); }
  void all_gather(const float* send, float* recv, std::size_t count, ncclComm_t comm, cudaStream_t stream) {
    NCCL_CHECK(ncclAllGather(send, recv, count, ncclFloat, comm, stream));
  }
};

void combine_allgather(Team& team) {
  NcclCalls nccl;
  gather_partials(nccl, static_cast<int>(team.gpus.size()), [&team](int i) {
    Gpu& g = *team.gpus[static_cast<std::size_t>(i)];
    return GatherSide{g.partial(), g.gathered(), team.comms[static_cast<std::size_t>(i)], g.context().stream()};
  });
  for (Gpu* g : team.gpus) {
    g->context().activate();
    combine_kernel<<<1, combine_threads(team.ranks), 0, g->context().stream()>>>(g->gathered(), team.ranks, g->result());
    CUDA_CHECK_LAUNCH("combine_kernel");
  }
}
// [combine_allgather]

// [combine_allreduce]
// Version "allreduce": the one call every framework uses. Fast and simple, but NCCL chooses the
// order of the additions (ring, tree, NVLS...; by size, topology and version), so with three or
// more ranks the bits may change between machines or library versions. With two it is a + b on
// both, which is commutative: the same bits, but by luck of the count, not by design.
void combine_allreduce(Team& team) {
  NcclGroup group;
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    NCCL_CHECK(ncclAllReduce(g.partial(), g.result(), 1, ncclFloat, ncclSum, team.comms[i], g.context().stream()));
  }
  group.end();
}
// [combine_allreduce]

// [combine_graph]
// Version "allgather_graph": the same combine, but its work for every GPU (NCCL's kernel and the
// pairwise add) is captured once into a CUDA graph per GPU and replayed. At small n the eager
// combine is bound by the host: NCCL's group call and the kernel launch take longer than the
// exchange itself, and the GPUs wait for them. A replay is one launch per GPU.
void combine_allgather_graph(Team& team) { replay_graph(team, combine_allgather); }
// [combine_graph]

// Version "p2p" runs inside the partial kernel (combine_over_peers): dot() launches it. Called as
// a separate step, it would have nothing to combine.
void combine_p2p(Team&) {
  throw course::UsageError("the p2p combine runs inside the partial kernel: call ch11::dot with it");
}

// [speed_of_light]
// Not a combine: the floor every version is held to. dot() runs it (floor_call): every GPU reads its
// own slice at once with the kit's read-only kernel and writes one value, and nothing is combined.
// Called as a separate step, it would have nothing to do.
void combine_speed_of_light(Team&) {
  throw course::UsageError("the speed-of-light row is not a combine: call ch11::dot with it");
}
// [speed_of_light]

// Version "host": what one would write without NCCL. Each partial crosses PCIe to the host, the
// host gathers them in rank order (across processes through host_allgather, MPI's job), and every
// GPU gets them back and adds them pairwise, as allgather's GPUs do. The host waits in the middle:
// the combine costs two round trips.
void combine_host(Team& team) {
  const int local = static_cast<int>(team.gpus.size());
  std::vector<float> mine(static_cast<std::size_t>(local)), all(static_cast<std::size_t>(team.ranks));
  for (Gpu* g : team.gpus) {
    g->context().activate();
    CUDA_CHECK(cudaMemcpyAsync(g->host_partials(), g->partial(), sizeof(float), cudaMemcpyDeviceToHost, g->context().stream()));
  }
  for (int i = 0; i < local; ++i) {
    team.gpus[static_cast<std::size_t>(i)]->context().synchronize();
    mine[static_cast<std::size_t>(i)] = team.gpus[static_cast<std::size_t>(i)]->host_partials()[0];
  }
  if (team.host_allgather) team.host_allgather(mine.data(), local, all.data());
  else all = mine;
  for (Gpu* g : team.gpus) {
    g->context().activate();
    std::copy(all.begin(), all.end(), g->host_partials());  // pinned: the copy is asynchronous and reads it later
    CUDA_CHECK(cudaMemcpyAsync(g->gathered(), g->host_partials(), all.size() * sizeof(float), cudaMemcpyHostToDevice,
                               g->context().stream()));
    combine_kernel<<<1, combine_threads(team.ranks), 0, g->context().stream()>>>(g->gathered(), team.ranks, g->result());
    CUDA_CHECK_LAUNCH("combine_kernel");
  }
}

}  // namespace

namespace on_host {
void gather_partials(GatherCalls& calls, const std::vector<GatherSide>& sides) {
  ch11::gather_partials(calls, static_cast<int>(sides.size()), [&sides](int i) { return sides[static_cast<std::size_t>(i)]; });
}
}  // namespace on_host

// [registry]
const std::vector<course::Version<Combine>>& versions() {
  static const std::vector<course::Version<Combine>> registry = {
      {"speed_of_light", "not a dot: every GPU reads its slice with 16-byte loads at once, one value written, no combine (the floor)",
       combine_speed_of_light},
      {"allgather", "ncclAllGather of the partials, added in a fixed pairwise order on every GPU (deterministic)", combine_allgather, true},
      {"allgather_graph", "the allgather combine captured once into a CUDA graph per GPU and replayed: one launch per GPU", combine_allgather_graph},
      {"allreduce", "ncclAllReduce(sum) of the partials: NCCL's order, fixed only by algorithm and topology", combine_allreduce},
      {"p2p", "each GPU's kernel stores its tagged partial into every GPU's memory over NVLink; no NCCL, one launch per GPU", combine_p2p},
      {"host", "partials gathered through the host, copied back to every GPU and added there pairwise", combine_host},
  };
  return registry;
}
// [registry]

bool across_processes(const course::Version<Combine>& v) { return v.run != combine_p2p; }

bool is_speed_of_light(const course::Version<Combine>& v) { return v.run == combine_speed_of_light; }

Gpu::Gpu(int device, std::size_t capacity, int max_ranks)
    : ctx_(device), capacity_(capacity), max_ranks_(max_ranks) {
  if (max_ranks < 1 || max_ranks > kMaxPartials)
    throw course::UsageError("ch11::Gpu: max_ranks must be 1 to " + std::to_string(kMaxPartials) + ", not " +
                             std::to_string(max_ranks));
  ctx_.activate();
  grid_ = partial_grid(ctx_.facts());
  floor_grid_ = course::kernels::read_floor_resident(ctx_.facts().sm_count);
  d_x_ = course::DeviceBuffer<float>(std::max<std::size_t>(capacity, 1));
  d_y_ = course::DeviceBuffer<float>(std::max<std::size_t>(capacity, 1));
  d_small_ = course::DeviceBuffer<float>(kGatherOffset + static_cast<std::size_t>(max_ranks));
  d_tagged_ = course::DeviceBuffer<unsigned long long>(static_cast<std::size_t>(grid_));
  d_epoch_ = course::DeviceBuffer<unsigned>(1);
  h_partials_ = course::PinnedBuffer<float>(static_cast<std::size_t>(max_ranks) + 2);
  // Tag 0 is never handed out: a slot nobody wrote in this call is never taken as written.
  CUDA_CHECK(cudaMemsetAsync(d_tagged_.data(), 0, d_tagged_.bytes(), ctx_.stream()));
  CUDA_CHECK(cudaMemsetAsync(d_epoch_.data(), 0, d_epoch_.bytes(), ctx_.stream()));
  d_small_.fill_bytes(0, ctx_.stream());
  ctx_.synchronize();
}

// [launch_partial]
// One trip per thread (8192 elements per block) while that fits on the SMs at once; beyond, two
// blocks per SM, each looping (chapter 06's grid for version 12).
void Gpu::launch_partial(std::size_t count, float* out, const PeerCombine& peers) {
  if (count > capacity_)
    throw course::UsageError("ch11::Gpu: a slice of " + std::to_string(count) + " elements, the buffers hold " +
                             std::to_string(capacity_));
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(count, std::size_t{kBlock} * 4 * kUnroll));
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(grid_)));
  ctx_.activate();  // the stream and the buffers belong to this device
  partial_kernel<<<blocks, kBlock, 0, ctx_.stream()>>>(d_x_.data(), d_y_.data(), count, d_tagged_.data(), d_epoch_.data(),
                                                        out ? out : partial(), peers);
  CUDA_CHECK_LAUNCH("partial_kernel");
}

void Gpu::launch_floor(std::size_t count, float* out) {
  if (count > capacity_)
    throw course::UsageError("ch11::Gpu: a slice of " + std::to_string(count) + " elements, the buffers hold " +
                             std::to_string(capacity_));
  ctx_.activate();
  course::kernels::launch_read_floor(d_x_.data(), d_y_.data(), count, out, floor_grid_, ctx_.stream());
}

// The device counts calls in its epoch; the host counts them too, and before the tag would wrap
// (once in 2^32 - 1 calls) clears the slots and the epoch, so an old word never reads as new.
void Gpu::count_call() {
  if (++calls_ < 0xFFFFFFFEu) return;
  ctx_.activate();
  CUDA_CHECK(cudaMemsetAsync(d_tagged_.data(), 0, d_tagged_.bytes(), ctx_.stream()));
  CUDA_CHECK(cudaMemsetAsync(d_epoch_.data(), 0, d_epoch_.bytes(), ctx_.stream()));
  calls_ = 0;
}

// [launch_partial]

void Gpu::poison() {
  ctx_.activate();
  d_small_.fill_bytes(0xFF, ctx_.stream());
  ctx_.synchronize();
}

// [launchers]
// One host thread per GPU after the first, so that the kernels of a p2p call start together. A
// launch costs the host a few microseconds; launched one after the other from one thread, the last
// GPU starts that much later, and every other GPU waits for its partial inside the combine. The
// kit's course::ThreadPool (the caller launches GPU 0, worker w GPU w): its idle workers poll for a
// while (a timing loop calls again within microseconds), then sleep, so an idle team costs no CPU.
using Launchers = course::ThreadPool;
// [launchers]

// The p2p combine's state: on every GPU of the team an inbox of one 8-byte word per rank, the
// device array of every GPU's inbox pointer, two clock stamps, and the threads that launch on
// every GPU after the first; made on first use.
struct Team::PeerState {
  std::vector<course::DeviceBuffer<unsigned long long>> inboxes;  // gpus order
  std::vector<course::DeviceBuffer<unsigned long long*>> tables;  // on GPU i: the pointers to every inbox
  std::vector<course::DeviceBuffer<unsigned long long>> clocks;   // on GPU i: partial end, result (ns)
  course::PinnedBuffer<unsigned long long> host_words;            // GPU i's tagged result, in host memory
  unsigned calls = 0;                                             // the tag of the last call
  std::unique_ptr<Launchers> launchers;                           // last: its threads stop first
};

Team::Team() = default;

Team::Team(Team&& o) noexcept
    : gpus(std::move(o.gpus)), comms(std::move(o.comms)), first_rank(o.first_rank), ranks(o.ranks),
      host_allgather(std::move(o.host_allgather)), graphs(std::move(o.graphs)), call_graphs(std::move(o.call_graphs)),
      peers(std::move(o.peers)), threaded_launch(o.threaded_launch) {
  o.comms.clear();
  o.gpus.clear();
  o.graphs.clear();
  o.call_graphs.clear();
}

Team& Team::operator=(Team&& o) noexcept {
  if (this != &o) {
    graphs.clear();  // a graph holds NCCL's resources of its communicator: destroyed first
    call_graphs.clear();
    for (ncclComm_t c : comms) ncclCommDestroy(c);
    gpus = std::move(o.gpus);
    comms = std::move(o.comms);
    first_rank = o.first_rank;
    ranks = o.ranks;
    host_allgather = std::move(o.host_allgather);
    graphs = std::move(o.graphs);
    call_graphs = std::move(o.call_graphs);
    peers = std::move(o.peers);
    threaded_launch = o.threaded_launch;
    o.comms.clear();
    o.gpus.clear();
    o.graphs.clear();
    o.call_graphs.clear();
  }
  return *this;
}

Team::~Team() {
  // A graph holds NCCL's resources of its communicator: every graph goes before the communicators.
  graphs.clear();
  call_graphs.clear();
  peers.reset();
  for (ncclComm_t c : comms) ncclCommDestroy(c);  // a destructor must not throw: errors ignored
}

// [replay_graph]
std::vector<Team::GraphExec> capture(Team& team, const std::function<void()>& enqueue) {
  // Every GPU's stream is captured at once: a group call enqueues on all of them together, and
  // NCCL refuses a group whose streams are partly captured.
  const std::size_t count = team.gpus.size();
  std::vector<bool> capturing(count, false);
  std::vector<Team::GraphExec> execs;
  try {
    for (std::size_t i = 0; i < count; ++i) {
      team.gpus[i]->context().activate();
      CUDA_CHECK(cudaStreamBeginCapture(team.gpus[i]->context().stream(), cudaStreamCaptureModeThreadLocal));
      capturing[i] = true;
    }
    enqueue();
    // Every capture ends before any graph is instantiated: while one of this thread's streams
    // is still capturing, instantiation is refused (cudaErrorStreamCaptureUnsupported).
    std::vector<cudaGraph_t> graphs(count, nullptr);
    cudaError_t failed = cudaSuccess;
    for (std::size_t i = 0; i < count; ++i) {
      team.gpus[i]->context().activate();
      capturing[i] = false;
      const cudaError_t ended = cudaStreamEndCapture(team.gpus[i]->context().stream(), &graphs[i]);
      if (failed == cudaSuccess) failed = ended;
    }
    for (std::size_t i = 0; i < count; ++i) {
      team.gpus[i]->context().activate();
      cudaGraphExec_t exec = nullptr;
      if (failed == cudaSuccess && graphs[i]) failed = cudaGraphInstantiate(&exec, graphs[i], 0);
      if (exec) execs.emplace_back(exec);
      if (graphs[i]) cudaGraphDestroy(graphs[i]);
    }
    CUDA_CHECK(failed);
  } catch (...) {
    for (std::size_t i = 0; i < count; ++i) {  // a capture left open would poison the stream
      if (!capturing[i]) continue;
      team.gpus[i]->context().activate();
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(team.gpus[i]->context().stream(), &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
      cudaGetLastError();
    }
    throw;
  }
  return execs;
}

void replay_graph(Team& team, Combine eager) {
  auto found = std::find_if(team.graphs.begin(), team.graphs.end(), [&](const auto& e) { return e.first == eager; });
  if (found == team.graphs.end()) {
    team.graphs.emplace_back(eager, capture(team, [&] { eager(team); }));
    found = team.graphs.end() - 1;
  }
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    g.context().activate();
    CUDA_CHECK(cudaGraphLaunch(found->second[i].get(), g.context().stream()));
  }
}
// [replay_graph]

// [make_local_team]
Team make_local_team(const std::vector<std::unique_ptr<Gpu>>& gpus, int count) {
  if (count < 1 || count > static_cast<int>(gpus.size()))
    throw course::UsageError("make_local_team: " + std::to_string(count) + " GPUs asked for, " +
                             std::to_string(gpus.size()) + " prepared");
  disable_nvls();
  Team team;
  std::vector<int> devices;
  for (int i = 0; i < count; ++i) {
    Gpu* g = gpus[static_cast<std::size_t>(i)].get();
    if (g->max_ranks() < count)
      throw course::UsageError("make_local_team: GPU " + std::to_string(i) + " was prepared for teams of at most " +
                               std::to_string(g->max_ranks()) + " ranks");
    team.gpus.push_back(g);
    devices.push_back(g->context().device());
  }
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    throw course::UsageError("make_local_team: the same device twice (NCCL needs one rank per GPU)");
  team.comms.resize(static_cast<std::size_t>(count));
  NCCL_CHECK(ncclCommInitAll(team.comms.data(), count, devices.data()));
  team.first_rank = 0;
  team.ranks = count;
  return team;
}
// [make_local_team]

// [make_rank_team]
Team make_rank_team(Gpu& gpu, const ncclUniqueId& id, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw course::UsageError("make_rank_team: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  if (gpu.max_ranks() < ranks)
    throw course::UsageError("make_rank_team: the GPU was prepared for teams of at most " + std::to_string(gpu.max_ranks()) +
                             " ranks, not " + std::to_string(ranks));
  disable_nvls();
  Team team;
  team.gpus.push_back(&gpu);
  team.comms.resize(1);
  gpu.context().activate();  // ncclCommInitRank joins with the current device
  NCCL_CHECK(ncclCommInitRank(&team.comms[0], ranks, id, rank));
  team.first_rank = rank;
  team.ranks = ranks;
  return team;
}
// [make_rank_team]

void fill_slices(Team& team, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    const Slice s = slice_of(n, team.ranks, team.first_rank + static_cast<int>(i));
    if (s.count > g.capacity())
      throw course::UsageError("fill_slices: a slice of " + std::to_string(s.count) + " elements, the buffers hold " +
                               std::to_string(g.capacity()));
    if (s.count == 0) continue;
    g.context().activate();
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(ceil_div(s.count, 256), 65535));
    fill_kernel<<<blocks, 256, 0, g.context().stream()>>>(g.x(), s.count, seed, s.begin);
    CUDA_CHECK_LAUNCH("fill_kernel");
    fill_kernel<<<blocks, 256, 0, g.context().stream()>>>(g.y(), s.count, course::seed_y(seed), s.begin);
    CUDA_CHECK_LAUNCH("fill_kernel");
  }
}

// [upload_slices]
// Each GPU pulls its own slice over its own link; all copies are enqueued before any is waited
// for, so with pinned memory they run at the same time.
void upload_slices(Team& team, const float* h_x, const float* h_y, std::size_t n) {
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    const Slice s = slice_of(n, team.ranks, team.first_rank + static_cast<int>(i));
    if (s.count > g.capacity())
      throw course::UsageError("upload_slices: a slice of " + std::to_string(s.count) + " elements, the buffers hold " +
                               std::to_string(g.capacity()));
    if (s.count == 0) continue;
    g.context().activate();
    CUDA_CHECK(cudaMemcpyAsync(g.x(), h_x + s.begin, s.count * sizeof(float), cudaMemcpyHostToDevice, g.context().stream()));
    CUDA_CHECK(cudaMemcpyAsync(g.y(), h_y + s.begin, s.count * sizeof(float), cudaMemcpyHostToDevice, g.context().stream()));
  }
}
// [upload_slices]

// [dot]
namespace {

// The slices of n on this process's GPUs, checked against what they were prepared for.
std::vector<std::size_t> slice_counts(Team& team, std::size_t n) {
  if (team.gpus.empty() || team.comms.size() != team.gpus.size() || team.ranks < 1)
    throw course::UsageError("ch11::dot: an empty or incomplete team");
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    const Slice s = slice_of(n, team.ranks, team.first_rank + static_cast<int>(i));
    if (s.count > team.gpus[i]->capacity())
      throw course::UsageError("ch11::dot: n = " + std::to_string(n) + " gives a slice of " + std::to_string(s.count) +
                               " elements; the GPUs were prepared for " + std::to_string(team.gpus[i]->capacity()));
    if (team.gpus[i]->max_ranks() < team.ranks)
      throw course::UsageError("ch11::dot: a GPU prepared for fewer ranks than the team has");
    counts.push_back(s.count);
  }
  return counts;
}

// Records event i of every GPU: plainly, or as a node of the graph being captured.
void record(Team& team, int i, bool capturing) {
  for (Gpu* g : team.gpus) {
    g->context().activate();
    CUDA_CHECK(cudaEventRecordWithFlags(g->event(i), g->context().stream(), capturing ? cudaEventRecordExternal : 0));
  }
}

// Enqueues one whole call on every GPU: the partials, the combine, the results to the host.
void enqueue_call(Team& team, Combine combine, const std::vector<std::size_t>& counts, bool timed, bool capturing) {
  if (timed) record(team, 0, capturing);
  for (std::size_t i = 0; i < team.gpus.size(); ++i) team.gpus[i]->launch_partial(counts[i]);
  if (timed) record(team, 1, capturing);
  combine(team);
  if (timed) record(team, 2, capturing);
  for (Gpu* g : team.gpus) {
    g->context().activate();
    CUDA_CHECK(cudaMemcpyAsync(g->host_partials() + g->max_ranks() + 1, g->result(), sizeof(float), cudaMemcpyDeviceToHost,
                               g->context().stream()));
  }
}

// The whole call of combine_allgather_graph as one graph per GPU, captured once per n (a graph
// holds its launch configuration) and replayed: one host launch per GPU per call.
constexpr std::size_t kGraphsKept = 16;

void replay_call(Team& team, std::size_t n, const std::vector<std::size_t>& counts) {
  auto found = std::find_if(team.call_graphs.begin(), team.call_graphs.end(), [&](const auto& e) { return e.first == n; });
  if (found == team.call_graphs.end()) {
    if (team.call_graphs.size() == kGraphsKept) team.call_graphs.erase(team.call_graphs.begin());
    team.call_graphs.emplace_back(n, capture(team, [&] { enqueue_call(team, combine_allgather, counts, true, true); }));
    found = team.call_graphs.end() - 1;
  }
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    g.count_call();
    CUDA_CHECK(cudaGraphLaunch(found->second[i].get(), g.context().stream()));
  }
}

// Peer access between every pair of the team's GPUs, and the inboxes, on first use of p2p.
Team::PeerState& peer_state(Team& team) {
  if (team.peers) return *team.peers;
  const int count = static_cast<int>(team.gpus.size());
  if (count != team.ranks)
    throw course::UsageError("p2p: one process must drive every rank (stores into another process's GPU memory "
                             "need CUDA IPC); under MPI use allgather");
  if (count > kMaxPeerRanks) throw course::UsageError("p2p: at most " + std::to_string(kMaxPeerRanks) + " GPUs");
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      const int a = team.gpus[static_cast<std::size_t>(i)]->context().device();
      const int b = team.gpus[static_cast<std::size_t>(j)]->context().device();
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can)
        throw NoPeerAccess("p2p: GPU " + std::to_string(a) + " cannot write into GPU " + std::to_string(b) +
                           "'s memory (no peer access between them)");
      team.gpus[static_cast<std::size_t>(i)]->context().activate();
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else CUDA_CHECK(e);
    }
  auto state = std::make_unique<Team::PeerState>();
  std::vector<unsigned long long*> pointers;
  for (Gpu* g : team.gpus) {
    g->context().activate();
    state->inboxes.emplace_back(static_cast<std::size_t>(count));
    state->inboxes.back().fill_bytes(0, g->context().stream());
    state->clocks.emplace_back(2);
    pointers.push_back(state->inboxes.back().data());
  }
  for (Gpu* g : team.gpus) {
    g->context().activate();
    state->tables.emplace_back(static_cast<std::size_t>(count));
    CUDA_CHECK(cudaMemcpyAsync(state->tables.back().data(), pointers.data(), pointers.size() * sizeof(pointers[0]),
                               cudaMemcpyHostToDevice, g->context().stream()));
  }
  state->host_words = course::PinnedBuffer<unsigned long long>(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) state->host_words.data()[i] = 0;  // tag 0: no call has stored here
  for (Gpu* g : team.gpus) g->context().synchronize();  // the host vector dies here
  state->launchers = std::make_unique<Launchers>(static_cast<unsigned>(team.gpus.size()));
  team.peers = std::move(state);
  return *team.peers;
}

// One p2p call: every GPU's kernel, each launched from its own host thread at the same time,
// combines inside itself and writes the result into its pinned host slot. Everything that can fail
// on the host is done before the launches, so no GPU is left waiting for a peer that was never
// launched (if a launch fails all the same, its peers end their wait with NaN after about a second).
void p2p_call(Team& team, const std::vector<std::size_t>& counts, Split* split) {
  Team::PeerState& state = peer_state(team);
  if (++state.calls >= 0xFFFFFFFEu) {  // the tag would wrap: clear every inbox, with no call in flight
    for (std::size_t i = 0; i < team.gpus.size(); ++i) {
      team.gpus[i]->context().activate();
      state.inboxes[i].fill_bytes(0, team.gpus[i]->context().stream());
    }
    for (Gpu* g : team.gpus) g->context().synchronize();
    for (std::size_t i = 0; i < team.gpus.size(); ++i) state.host_words.data()[i] = 0;
    state.calls = 1;
  }
  std::vector<PeerCombine> launches;
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    PeerCombine pc;
    pc.inboxes = state.tables[i].data();
    pc.rank = static_cast<int>(i);
    pc.ranks = team.ranks;
    pc.tag = state.calls;
    pc.result = g.result();
    pc.host_word = state.host_words.data() + i;
    pc.clock = state.clocks[i].data();
    launches.push_back(pc);
    g.count_call();
  }
  auto launch = [&](std::size_t i) {
    Gpu& g = *team.gpus[i];
    g.context().activate();  // the current device is per thread
    if (split) CUDA_CHECK(cudaEventRecord(g.event(0), g.context().stream()));
    g.launch_partial(counts[i], nullptr, launches[i]);
    if (split) CUDA_CHECK(cudaEventRecord(g.event(1), g.context().stream()));
  };
  if (team.threaded_launch) {
    state.launchers->run(launch);
  } else {
    for (std::size_t i = 0; i < team.gpus.size(); ++i) launch(i);
  }
}

// [floor_call]
// One call of the speed-of-light row: on every GPU, from this thread one after the other (as the eager
// combines launch their partial kernels), the read-only kernel over its slice, its one value stored
// straight into the GPU's pinned host slot (mapped: no copy to enqueue), which holds NaN until then.
// dot() then waits for every GPU's stream, as it does for the eager combines: the value is stored
// before the other blocks have finished reading, so only the stream says that every byte was read.
void floor_call(Team& team, const std::vector<std::size_t>& counts, bool timed) {
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    float* slot = g.host_partials() + g.max_ranks() + 1;
    *slot = std::numeric_limits<float>::quiet_NaN();
    g.context().activate();
    if (timed) CUDA_CHECK(cudaEventRecord(g.event(0), g.context().stream()));
    g.launch_floor(counts[i], slot);
    if (timed) CUDA_CHECK(cudaEventRecord(g.event(1), g.context().stream()));
  }
}
// [floor_call]

float float_from_bits(unsigned bits) {
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// [wait_for_result]
// Waits for a result that a kernel stores into pinned host memory: returns as soon as `arrived()`
// holds, which is sooner than the stream can report the kernel done (its blocks must exit and the
// GPU signal the host after that). Asks the stream now and then, so that a kernel that failed, or
// finished without storing, ends the wait with its error instead of a hang.
template <class Arrived>
void wait_for_result(Gpu& gpu, Arrived arrived, const char* what) {
  for (unsigned spins = 1; !arrived(); ++spins) {
    if (spins % 256 != 0) continue;
    const cudaError_t e = cudaStreamQuery(gpu.context().stream());
    if (e == cudaErrorNotReady) continue;
    CUDA_CHECK(e);
    if (!arrived())
      throw std::runtime_error(std::string(what) + ": GPU " + std::to_string(gpu.context().device()) +
                               " finished without storing its result");
    return;
  }
}
// [wait_for_result]

}  // namespace

std::vector<float> dot(Team& team, Combine combine, std::size_t n, Split* split) {
  const std::vector<std::size_t> counts = slice_counts(team, n);
  const bool p2p = combine == combine_p2p;
  const bool floor_only = combine == combine_speed_of_light;
  if (floor_only) {
    floor_call(team, counts, split != nullptr);
  } else if (combine == combine_allgather_graph) {
    replay_call(team, n, counts);  // the graph records the split's events on every call
  } else if (p2p) {
    p2p_call(team, counts, split);
  } else {
    for (Gpu* g : team.gpus) g->count_call();
    enqueue_call(team, combine, counts, split != nullptr, false);
  }
  std::vector<float> results(team.gpus.size());
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    Gpu& g = *team.gpus[i];
    if (p2p) {
      // p2p's kernels store their result tagged with the call's number: wait for this call's word.
      const volatile unsigned long long* word = team.peers->host_words.data() + i;
      const unsigned tag = team.peers->calls;
      wait_for_result(g, [&] { return static_cast<unsigned>(*word >> 32) == tag; }, "p2p");
      results[i] = float_from_bits(static_cast<unsigned>(*word));
      if (split) g.context().synchronize();  // the events below must have happened
    } else {
      g.context().synchronize();
      results[i] = g.host_partials()[g.max_ranks() + 1];
    }
    if (split && floor_only) {
      float kernel = 0;  // nothing to combine: the whole call's GPU time is the kernel's
      CUDA_CHECK(cudaEventElapsedTime(&kernel, g.event(0), g.event(1)));
      split->kernel_ms = std::max(split->kernel_ms, static_cast<double>(kernel));
    } else if (split && p2p) {
      // One kernel does both: its span by events, the combine's share by the GPU's clock stamps.
      float whole = 0;
      unsigned long long stamps[2] = {0, 0};
      CUDA_CHECK(cudaEventElapsedTime(&whole, g.event(0), g.event(1)));
      CUDA_CHECK(cudaMemcpy(stamps, team.peers->clocks[i].data(), sizeof stamps, cudaMemcpyDeviceToHost));
      const double combined = static_cast<double>(stamps[1] - stamps[0]) * 1e-6;
      split->kernel_ms = std::max(split->kernel_ms, static_cast<double>(whole) - combined);
      split->combine_ms = std::max(split->combine_ms, combined);
    } else if (split) {
      float kernel = 0, combined = 0;
      CUDA_CHECK(cudaEventElapsedTime(&kernel, g.event(0), g.event(1)));
      CUDA_CHECK(cudaEventElapsedTime(&combined, g.event(1), g.event(2)));
      split->kernel_ms = std::max(split->kernel_ms, static_cast<double>(kernel));
      split->combine_ms = std::max(split->combine_ms, static_cast<double>(combined));
    }
  }
  return results;
}
// [dot]

float single_gpu_dot(Gpu& gpu, std::size_t n, Split* split) {
  // The partial kernel writes the dot straight into pinned host memory (mapped: the device
  // writes it over the link), so the call is one launch and one wait: no copy to enqueue.
  // The host waits for that store, not for the stream (as dot() does for p2p): before the launch
  // the slot holds a NaN whose bits no float addition produces, and the wait ends when they change.
  constexpr unsigned kNotYet = 0x7fbadbadu;
  float* h = gpu.host_partials() + gpu.max_ranks() + 1;
  volatile unsigned* slot = reinterpret_cast<volatile unsigned*>(h);
  *slot = kNotYet;
  gpu.count_call();
  gpu.context().activate();
  if (split) CUDA_CHECK(cudaEventRecord(gpu.event(0), gpu.context().stream()));
  gpu.launch_partial(n, h);
  if (split) CUDA_CHECK(cudaEventRecord(gpu.event(1), gpu.context().stream()));
  wait_for_result(gpu, [&] { return *slot != kNotYet; }, "single_gpu_dot");
  if (split) gpu.context().synchronize();
  if (split) {
    float kernel = 0;
    CUDA_CHECK(cudaEventElapsedTime(&kernel, gpu.event(0), gpu.event(1)));
    split->kernel_ms = kernel;
    split->combine_ms = 0;
  }
  return float_from_bits(*slot);
}

void launch_combine(Gpu& gpu, const float* d_partials, int count, float* d_result) {
  if (count < 0 || count > kMaxPartials)
    throw course::UsageError("launch_combine: " + std::to_string(count) + " partials (at most " +
                             std::to_string(kMaxPartials) + ")");
  gpu.context().activate();
  combine_kernel<<<1, combine_threads(count), 0, gpu.context().stream()>>>(d_partials, count, d_result);
  CUDA_CHECK_LAUNCH("combine_kernel");
}

void delay(Gpu& gpu, double us) {
  gpu.context().activate();
  delay_kernel<<<1, 1, 0, gpu.context().stream()>>>(static_cast<unsigned>(std::max(0.0, us)));
  CUDA_CHECK_LAUNCH("delay_kernel");
}

course::Reference reference_from_seed(std::size_t n, std::uint64_t seed) {
  return course::reference_dot_from_seeds(n, seed, course::seed_y(seed));
}

}  // namespace ch11
