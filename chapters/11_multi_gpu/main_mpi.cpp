// Chapter 11, the MPI form — the same dot, one process per GPU.
//
//   mpirun -np 2 11_multi_gpu_mpi                  every combine, n per GPU swept, time per call
//   mpirun -np 1 11_multi_gpu_mpi --n 2^28         one process: a communicator of one
//   mpirun -np 2 11_multi_gpu_mpi --test           the check CTest runs: awkward sizes, the fp64
//                                                  bound, the same bits on every rank and run
//   mpirun -np 2 11_multi_gpu_mpi --csv results/local/11_multi_gpu_mpi.csv
//
// The speed-of-light row (not a dot: every rank's GPU reads its slice, no combine) runs here too:
// it needs no other process. It is checked by the value each rank writes, and has no rel_error.
//
// Rank 0 makes the NCCL unique id and MPI broadcasts it; every rank joins with ncclCommInitRank on
// the GPU of its local rank. Across nodes the program does not change: mpirun starts it on every
// node, and NCCL takes the network (InfiniBand, RoCE, TCP) where NVLink or PCIe ended.

#include <cuda.h>  // the driver API types only: its functions are looked up at run time
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/table.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch11::Combine>;

void mpi_check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed (MPI error " + std::to_string(code) + ")");
}
#define MPI_CHECK(call) mpi_check((call), #call)

std::uint32_t bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Every rank's result, in rank order, on every rank.
std::vector<float> gather_results(float mine, int ranks) {
  std::vector<float> all(static_cast<std::size_t>(ranks));
  MPI_CHECK(MPI_Allgather(&mine, 1, MPI_FLOAT, all.data(), 1, MPI_FLOAT, MPI_COMM_WORLD));
  return all;
}

// The devices other than `mine` on which this process holds a context ("" when none): a rank must
// open a context only on its own GPU (each costs memory there, and an exclusive-process GPU
// admits one process). The driver API sees the primary contexts the runtime made; its functions
// are looked up through the runtime, so the program does not link libcuda and still starts (and
// says "no GPU") on a machine without a driver.
std::string foreign_contexts(int mine) {
  using GetFn = CUresult (*)(CUdevice*, int);
  using StateFn = CUresult (*)(CUdevice, unsigned*, int*);
  void* get = nullptr;
  void* state = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &get, 12000, cudaEnableDefault, &found) != cudaSuccess || !get ||
      cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &state, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      !state)
    return "the driver's cuDeviceGet / cuDevicePrimaryCtxGetState could not be found";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return "cudaGetDeviceCount failed";
  std::string foreign;
  for (int d = 0; d < count; ++d) {
    if (d == mine) continue;
    CUdevice dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (reinterpret_cast<GetFn>(get)(&dev, d) != CUDA_SUCCESS ||
        reinterpret_cast<StateFn>(state)(dev, &flags, &active) != CUDA_SUCCESS)
      return "cuDevicePrimaryCtxGetState failed for device " + std::to_string(d);
    if (active) foreign += (foreign.empty() ? "" : ", ") + std::to_string(d);
  }
  return foreign;
}

}  // namespace

int main(int argc, char** argv) {
  ch11::disable_nvls();  // before MPI_Init too: some MPI builds load NCCL-aware plugins early
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1, local_rank = 0, local_ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);

  course::App app("11_multi_gpu_mpi",
                  "Chapter 11, MPI form: one process per GPU, the NCCL unique id shared over MPI. Every combine "
                  "over a sweep of n per GPU; --test runs the correctness check CTest uses.",
                  std::size_t{1} << 28, 20, 3);
  bool test_mode = false;
  app.cli().add_flag("--test", test_mode, "Check correctness at awkward sizes and exit (0: all passed)");
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& v : ch11::versions()) names.emplace_back(v.name, v.description);
  app.set_versions(names);

  // --test skips (exit 0, CTest's marker) where there is no GPU: checked in the body, not by run().
  bool test_arg = false;
  for (int i = 1; i < argc; ++i) test_arg = test_arg || std::string(argv[i]) == "--test";
  const int rc = app.run(argc, argv, [&](const course::Options& opt) {
    std::string why;
    if (test_mode && !course::gpu_available(&why)) {
      if (rank == 0) std::printf("COURSE-NO-GPU: %s\n", course::no_gpu_message(why).c_str());
      return course::kExitOk;
    }
    const int available = course::device_count();
    if (available < local_ranks) {
      // A test that needs more GPUs than this node has is skipped, never passed (CTest's regex).
      if (rank == 0)
        std::printf("COURSE-FEW-GPUS: %d process(es) on this node need %d GPUs, it has %d\n", local_ranks, local_ranks,
                    available);
      return test_mode ? course::kExitOk : course::kExitNoGpu;
    }
    const std::size_t n_max = test_mode ? std::size_t{1} << 21 : opt.n * static_cast<std::size_t>(ranks);
    ch11::Gpu gpu(local_rank, ch11::max_slice(n_max, ranks), ranks);
    // [unique_id]
    // Rank 0 asks NCCL for a unique id (an address to meet at); MPI carries its 128 bytes to every
    // rank; each joins the communicator with its own rank, on the GPU of its local rank.
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    ch11::Team team = ch11::make_rank_team(gpu, id, rank, ranks);
    team.host_allgather = [](const float* mine, int count, float* all) {
      MPI_CHECK(MPI_Allgather(mine, count, MPI_FLOAT, all, count, MPI_FLOAT, MPI_COMM_WORLD));
    };
    // [unique_id]
    if (rank == 0)
      std::printf("%d rank(s); rank 0 on GPU %d: %s\n", ranks, local_rank, course::describe_device(gpu.context().facts()).c_str());

    if (test_mode) {
      // n = 0, fewer elements than ranks, not divisible by the rank count, around one block, large.
      const std::vector<std::size_t> sizes = {0, 1, static_cast<std::size_t>(ranks) - 1 + 1, 3, 8191, 8192 * 3 + 5,
                                              (std::size_t{1} << 20) + 3, n_max - 1};
      int failures = 0;
      for (const auto& v : ch11::versions())
        for (std::size_t n : sizes) {
          if (!ch11::across_processes(v)) continue;
          const std::uint64_t seed = opt.seed + 7 * n + 1;
          ch11::fill_slices(team, n, seed);
          const course::Reference ref = ch11::reference_from_seed(n, seed);
          gpu.poison();
          const std::vector<float> first = gather_results(ch11::dot(team, v.run, n)[0], ranks);
          gpu.poison();
          const std::vector<float> second = gather_results(ch11::dot(team, v.run, n)[0], ranks);
          std::string why;
          const bool is_floor = ch11::is_speed_of_light(v);
          for (int r = 0; r < ranks && why.empty(); ++r) {
            if (is_floor) {  // not a dot: each rank writes one value, finite from finite inputs
              if (!std::isfinite(first[static_cast<std::size_t>(r)]) || !std::isfinite(second[static_cast<std::size_t>(r)]))
                why = "rank " + std::to_string(r) + " left its one value unwritten (NaN)";
              continue;
            }
            const course::Verdict verdict = course::check_dot(first[static_cast<std::size_t>(r)], ref);
            if (!verdict.ok) why = "rank " + std::to_string(r) + ": " + verdict.message;
            else if (bits(first[static_cast<std::size_t>(r)]) != bits(second[static_cast<std::size_t>(r)]))
              why = "rank " + std::to_string(r) + " gave other bits on the second run";
            else if (v.name != "allreduce" && bits(first[static_cast<std::size_t>(r)]) != bits(first[0]))
              why = "rank " + std::to_string(r) + " holds other bits than rank 0";
          }
          if (n == 0 && why.empty() && !is_floor && bits(first[0]) != 0) why = "n = 0 must give exactly 0";
          if (!why.empty()) ++failures;
          if (rank == 0)
            std::printf("%s %-9s n = %-8zu %s\n", why.empty() ? "PASS" : "FAIL", std::string(v.name).c_str(), n, why.c_str());
        }
      // Every rank opened a context on its own GPU only (the GPU probe, the Context, NCCL).
      const std::string foreign = foreign_contexts(local_rank);
      std::printf("%s rank %d: contexts on other GPUs than its own (%d): %s\n", foreign.empty() ? "PASS" : "FAIL", rank,
                  local_rank, foreign.empty() ? "none" : foreign.c_str());
      if (!foreign.empty()) ++failures;
      if (rank == 0) std::printf("%d failure(s) with %d rank(s)\n", failures, ranks);
      return failures == 0 ? course::kExitOk : course::kExitFailure;
    }

    course::Table table({"version", "config", "gpus", "n", "n_per_gpu", "bytes", "reps", "median_ms", "gbps",
                         "pct_roofline", "kernel_ms", "combine_ms", "combine_pct", "rel_error", "valid"});
    const double roof = gpu.context().roofline().read_gbps;
    double roof_all = 0;
    MPI_CHECK(MPI_Allreduce(&roof, &roof_all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    bool all_valid = true;
    std::vector<std::size_t> per_sizes;
    if (opt.n_given) per_sizes = {opt.n};
    else
      for (std::size_t s = std::size_t{1} << 16; s <= opt.n; s *= 4) per_sizes.push_back(s);
    for (std::size_t per : per_sizes) {
      const std::size_t n = per * static_cast<std::size_t>(ranks);
      const std::uint64_t seed = opt.seed + 2 * per;
      ch11::fill_slices(team, n, seed);
      const course::Reference ref = ch11::reference_from_seed(n, seed);
      for (const auto& v : ch11::versions()) {
        if (!opt.selects(v.name) && !ch11::is_speed_of_light(v)) continue;  // the floor always runs
        if (!ch11::across_processes(v)) continue;
        const bool is_floor = ch11::is_speed_of_light(v);  // not a dot: it passes when its one value was written
        auto valid = [&](float got) { return is_floor ? std::isfinite(got) : course::check_dot(got, ref).ok; };
        bool ok = valid(ch11::dot(team, v.run, n)[0]);
        std::vector<double> samples;
        float last = 0;
        const int reps = n >= (std::size_t{1} << 26) ? opt.reps : std::max(opt.reps, 100);
        for (int r = 0; r < opt.warmup + reps; ++r) {
          MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // every rank starts the call together
          const auto t0 = std::chrono::steady_clock::now();
          last = ch11::dot(team, v.run, n)[0];
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (r >= opt.warmup) samples.push_back(ms);
        }
        ok = ok && valid(last);
        std::vector<double> kernel, combine;
        for (int r = 0; r < 7; ++r) {
          ch11::Split s;
          MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
          ch11::dot(team, v.run, n, &s);
          kernel.push_back(s.kernel_ms);
          combine.push_back(s.combine_ms);
        }
        // The slowest rank's numbers: a call is done when every rank has its result.
        double mine[3] = {course::summarize(samples).median, course::summarize(kernel).median, course::summarize(combine).median};
        double worst[3] = {0, 0, 0};
        MPI_CHECK(MPI_Allreduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        int ok_mine = ok ? 1 : 0, ok_all = 0;
        MPI_CHECK(MPI_Allreduce(&ok_mine, &ok_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        all_valid = all_valid && ok_all == 1;
        const double gb = course::gbps(2.0 * n * sizeof(float), worst[0]);
        table.add_row({std::string(v.name), "mpi ranks=" + std::to_string(ranks), static_cast<long long>(ranks),
                       static_cast<long long>(n), static_cast<long long>(per), 2.0 * n * sizeof(float),
                       static_cast<long long>(samples.size()), worst[0], gb, 100.0 * gb / roof_all, worst[1], worst[2],
                       is_floor ? std::nan("") : 100.0 * worst[2] / std::max(worst[1], 1e-9),
                       is_floor ? std::nan("") : course::check_dot(last, ref).rel_error, static_cast<long long>(ok_all)});
      }
    }
    if (rank == 0) {
      std::cout << "\nThe dot, one process per GPU (time per call on the slowest rank):\n\n";
      table.print(std::cout, {"version", "gpus", "n", "median_ms", "gbps", "pct_roofline", "kernel_ms", "combine_ms", "valid"});
      if (!opt.csv.empty()) {
        table.write_csv(opt.csv);
        std::cout << "\nCSV written to " << opt.csv << "\n";
      }
    }
    return all_valid ? course::kExitOk : course::kExitFailure;
  }, !test_arg);
  if (rc != course::kExitOk && ranks > 1) {
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, rc);  // a failed rank must not leave the others waiting in a collective
  }
  MPI_Finalize();
  return rc;
}
