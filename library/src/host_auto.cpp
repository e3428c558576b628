// libdotcourse: the fastest path for a dot of two host arrays (host_auto.hpp): the plan, the choice,
// the CPU and the split paths, and the calibration that measures the crossovers. Library code, not
// an exercise: it calls the lesson's engine (chapter 07's dot.hpp) and adds no hole.

#include "host_auto.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "course/check.hpp"
#include "course/cpu_dot.hpp"

namespace ch07 {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

unsigned default_threads() {
  if (const char* env = std::getenv("DOTCOURSE_CPU_THREADS")) {
    char* end = nullptr;
    const unsigned long t = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && t >= 1 && t <= 1024) return static_cast<unsigned>(t);
  }
  return course::usable_cpus();  // the affinity mask's CPUs, not the machine's
}

// The fields of a report the caller's size covers (a report from an older header is shorter).
void fill(dotcourse_report* report, const dotcourse_report& r) {
  if (report == nullptr) return;
  const std::size_t size = std::min(report->size, sizeof(dotcourse_report));
  if (size <= sizeof(report->size)) return;
  std::memcpy(reinterpret_cast<char*>(report) + sizeof(report->size),
              reinterpret_cast<const char*>(&r) + sizeof(r.size), size - sizeof(r.size));
}

}  // namespace

std::string device_name(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

// [default_plan]
dotcourse_plan default_plan() {
  dotcourse_plan plan{};
  plan.size = sizeof plan;
  plan.calibrated = 0;
  plan.rows = 0;  // no row: the CPU for every n, staged or registered
  return plan;
}
// [default_plan]

void check_plan(const dotcourse_plan& plan) {
  if (plan.rows > DOTCOURSE_PLAN_ROWS)
    throw course::UsageError("plan: " + std::to_string(plan.rows) + " rows, at most " +
                             std::to_string(DOTCOURSE_PLAN_ROWS));
  std::size_t last[2] = {0, 0};
  bool seen[2] = {false, false};
  for (std::size_t i = 0; i < plan.rows; ++i) {
    const dotcourse_plan_row& r = plan.row[i];
    const std::string where = "plan row " + std::to_string(i) + ": ";
    if (r.registered != 0 && r.registered != 1) throw course::UsageError(where + "registered is neither 0 nor 1");
    if (r.path != DOTCOURSE_PATH_CPU && r.path != DOTCOURSE_PATH_GPU && r.path != DOTCOURSE_PATH_SPLIT)
      throw course::UsageError(where + "unknown path " + std::to_string(static_cast<int>(r.path)));
    if (r.path == DOTCOURSE_PATH_SPLIT && !(r.gpu_share > 0.0 && r.gpu_share < 1.0))
      throw course::UsageError(where + "a split needs 0 < gpu_share < 1");
    const int k = r.registered;
    if (seen[k] && r.n_min <= last[k])
      throw course::UsageError(where + "n_min must grow from row to row (for the same registered)");
    seen[k] = true;
    last[k] = r.n_min;
  }
}

// [choose]
Choice choose(const dotcourse_plan& plan, std::size_t n, bool registered) {
  Choice c;  // no row at or below n: the CPU
  for (std::size_t i = 0; i < plan.rows && i < DOTCOURSE_PLAN_ROWS; ++i) {
    const dotcourse_plan_row& r = plan.row[i];
    if ((r.registered != 0) != registered || r.n_min > n) continue;
    c.path = r.path;
    c.n_gpu = r.path == DOTCOURSE_PATH_GPU ? n
              : r.path == DOTCOURSE_PATH_SPLIT ? static_cast<std::size_t>(static_cast<double>(n) * r.gpu_share)
                                               : 0;
  }
  // A split with nothing on one side is the other path.
  if (c.path == DOTCOURSE_PATH_SPLIT && c.n_gpu == 0) c.path = DOTCOURSE_PATH_CPU;
  if (c.path == DOTCOURSE_PATH_SPLIT && c.n_gpu >= n) c = {DOTCOURSE_PATH_GPU, n};
  return c;
}
// [choose]

HostAuto::HostAuto(unsigned threads)
    : threads_(threads != 0 ? threads : default_threads()),
      pool_threads_(std::min(threads_, course::usable_cpus())),
      plan_(default_plan()) {
  plan_.cpu_threads = threads_;
}

// [host_auto_pool]
// threads_ parts (the same bits on every host for the same threads_), on at most as many threads as
// the process has CPUs. The view follows the process's pool (a new one after fork()).
course::ThreadPool& HostAuto::pool() {
  course::ThreadPool& shared = course::process_pool(pool_threads_);
  if (!pool_ || &pool_->owner() != &shared) pool_ = std::make_unique<course::ThreadPool>(shared, threads_);
  return *pool_;
}
// [host_auto_pool]

void HostAuto::set_plan(const dotcourse_plan& plan) {
  check_plan(plan);
  char device[sizeof plan_.device];
  std::memcpy(device, plan_.device, sizeof device);
  plan_ = plan;  // the rows and `calibrated`; device and cpu_threads stay the context's
  plan_.size = sizeof plan_;
  plan_.cpu_threads = threads_;
  std::memcpy(plan_.device, device, sizeof device);
}

void HostAuto::set_device(const std::string& name) {
  std::memset(plan_.device, 0, sizeof plan_.device);
  std::strncpy(plan_.device, name.c_str(), sizeof plan_.device - 1);
}

// [host_auto_dot]
float HostAuto::dot(Engine* engine, const float* x, const float* y, std::size_t n, dotcourse_where where,
                    dotcourse_report* report) {
  const auto t0 = Clock::now();
  dotcourse_report r{};
  r.size = sizeof r;
  r.registered = engine != nullptr && n > 0 && engine->is_registered(x, n * sizeof(float)) &&
                 engine->is_registered(y, n * sizeof(float));
  Choice c;
  switch (where) {
    case DOTCOURSE_WHERE_CPU: c = {DOTCOURSE_PATH_CPU, 0}; break;
    case DOTCOURSE_WHERE_GPU: c = {DOTCOURSE_PATH_GPU, n}; break;
    case DOTCOURSE_WHERE_AUTO:
      if (engine != nullptr) {
        c = choose(plan_, n, r.registered != 0);
        r.calibrated = plan_.calibrated;
      }
      break;
    default: throw course::UsageError("where is " + std::to_string(static_cast<int>(where)) + ", not AUTO, CPU or GPU");
  }
  if (c.path != DOTCOURSE_PATH_CPU) {
    if (engine == nullptr)
      throw course::NoGpuError("where = GPU on a context without a GPU (made by dotcourse_create_cpu)");
    // The GPU's limit is the engine's (require_fits, chapter 07's exercise 3, as every host-array
    // path checks it); only the hint that the CPU has none is this path's own.
    try {
      require_fits(*engine, n);
    } catch (const TooLargeError& e) {
      throw TooLargeError(std::string(e.what()) + ", or ask for the CPU (where = CPU), which has no limit");
    }
    // Only a call that uses the GPU makes its device current: the CPU path makes no CUDA call, so
    // a small dot on a GPU context costs what it costs on a CPU-only one.
    engine->gpu().activate();
  }
  float result = 0.0f;
  if (c.path == DOTCOURSE_PATH_CPU) {
    result = static_cast<float>(course::cpu_dot(pool(), x, y, n));
    r.cpu_threads = course::cpu_dot_parts(n, threads_);
  } else if (c.path == DOTCOURSE_PATH_GPU) {
    result = dot_host(*engine, x, y, n);
  } else {
    // Both at once: the calling thread copies [0, n_gpu) to the GPU (dot_host, with the engine's
    // staging threads if the arrays are not registered) while the pool's other threads sum the rest.
    // The two parts are added in a fixed order: the same n and plan give the same bits.
    const std::size_t m = c.n_gpu;
    float gpu_part = 0.0f;
    const double cpu_part = course::cpu_dot_alongside(pool(), x + m, y + m, n - m,
                                                      [&] { gpu_part = dot_host(*engine, x, y, m); });
    result = static_cast<float>(static_cast<double>(gpu_part) + cpu_part);
    r.cpu_threads = threads_ > 1 ? threads_ - 1 : 1;
  }
  r.path = c.path;
  r.n_gpu = c.n_gpu;
  r.n_cpu = n - c.n_gpu;
  r.seconds = seconds_since(t0);
  fill(report, r);
  return result;
}
// [host_auto_dot]

// [calibrate]
// For each size, every candidate (CPU, GPU, and both at several shares) runs in a block of its own
// (calibration_order); the median of each decides. The CPU keeps the row
// unless another path is at least 10% faster: it needs no GPU, and on a shared host the medians of
// one calibration move by several per cent (an H100 host's calibration with a 3% margin chose the
// split at 2^26, which then ran 1.35x slower than the CPU alone in the benchmark).
const dotcourse_plan& HostAuto::calibrate(Engine& engine, std::size_t n_limit) {
  constexpr std::size_t kMaxN = std::size_t{1} << 26;
  const std::size_t top = std::min({n_limit, engine.n_max(), kMaxN});
  if (top < (std::size_t{1} << 12))
    throw course::UsageError("calibrate: n_limit and n_max must be at least 4096 (2^12)");
  // x and y in one buffer, y on its own pages, registered once for the registered rows.
  const std::size_t page = 4096 / sizeof(float);
  const std::size_t y_off = (top + page - 1) / page * page;
  std::vector<float> buffer(y_off + top + page);
  float* base = buffer.data() + (page - reinterpret_cast<std::uintptr_t>(buffer.data()) / sizeof(float) % page) % page;
  for (std::size_t i = 0; i < y_off + top; ++i) base[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  const float* x = base;
  const float* y = base + y_off;

  const double shares[] = {0.125, 0.25, 0.375, 0.5, 0.625};
  struct Candidate {
    dotcourse_path path;
    double share;
  };
  std::vector<Candidate> candidates = {{DOTCOURSE_PATH_CPU, 0.0}, {DOTCOURSE_PATH_GPU, 1.0}};
  for (double s : shares) candidates.push_back({DOTCOURSE_PATH_SPLIT, s});

  dotcourse_plan plan = default_plan();
  plan.calibrated = 1;
  plan.cpu_threads = threads_;
  std::memcpy(plan.device, plan_.device, sizeof plan.device);

  const dotcourse_plan saved = plan_;
  dotcourse_plan forced = default_plan();  // one row per candidate, rebuilt per run
  for (int registered = 0; registered <= 1; ++registered) {
    if (registered) engine.register_host(base, (y_off + top) * sizeof(float));
    try {
      dotcourse_path last_path = DOTCOURSE_PATH_CPU;
      double last_share = 0.0;
      for (std::size_t n = std::size_t{1} << 12; n <= top; n *= 4) {
        const int reps = static_cast<int>(std::clamp<std::size_t>((std::size_t{1} << 24) / n, 5, 31));
        std::vector<std::vector<double>> times(candidates.size());
        for (const CalibrationStep& step : calibration_order(candidates.size(), reps)) {
          const Candidate& cand = candidates[step.candidate];
          forced.rows = 1;
          forced.row[0] = {0, registered, cand.path, cand.share};
          plan_ = forced;  // put back below, and by the catch if a call throws
          const auto t0 = Clock::now();
          (void)dot(&engine, x, y, n, DOTCOURSE_WHERE_AUTO, nullptr);
          const double t = seconds_since(t0);
          plan_ = saved;
          if (step.timed) times[step.candidate].push_back(t);
        }
        std::vector<double> median(candidates.size());
        for (std::size_t k = 0; k < candidates.size(); ++k) {
          auto& v = times[k];
          std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
          median[k] = v[v.size() / 2];
        }
        std::size_t best = 0;
        for (std::size_t k = 1; k < candidates.size(); ++k)
          if (median[k] < median[best]) best = k;
        if (median[best] > 0.90 * median[0]) best = 0;
        // One row per change of path; the row for 2^12 and up always (a plan that says so is clearer).
        const bool change = n == (std::size_t{1} << 12) || candidates[best].path != last_path ||
                            candidates[best].share != last_share;
        if (change && plan.rows < DOTCOURSE_PLAN_ROWS) {
          plan.row[plan.rows++] = {n, registered, candidates[best].path, candidates[best].share};
          last_path = candidates[best].path;
          last_share = candidates[best].share;
        }
      }
    } catch (...) {
      plan_ = saved;
      if (registered) engine.unregister_host(base);
      throw;
    }
    if (registered) engine.unregister_host(base);
  }
  set_plan(plan);
  return plan_;
}
// [calibrate]

}  // namespace ch07
