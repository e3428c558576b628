#include "course_test.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "course/random.hpp"

namespace course::test {
namespace {

// Catch2's own invoker interface, the same in v2 and v3; ownership of it differs (below).
class FunctionInvoker : public Catch::ITestInvoker {
 public:
  explicit FunctionInvoker(std::function<void()> body) : body_(std::move(body)) {}
  void invoke() const override { body_(); }

 private:
  std::function<void()> body_;
};

// Names and tags must outlive registration only until Catch2 copies them into its TestCaseInfo,
// which both versions do inside AutoReg's constructor; kept alive anyway, for safety.
std::vector<std::unique_ptr<std::string>>& keep_alive() {
  static std::vector<std::unique_ptr<std::string>> strings;
  return strings;
}

}  // namespace

bool add_case(const std::string& name, const std::string& tags, std::function<void()> body) {
  auto& kept = keep_alive();
  kept.push_back(std::make_unique<std::string>(name));
  const std::string& kept_name = *kept.back();
  kept.push_back(std::make_unique<std::string>(tags));
  const std::string& kept_tags = *kept.back();
#if COURSE_CATCH_MAJOR >= 3
  Catch::AutoReg reg(Catch::Detail::unique_ptr<Catch::ITestInvoker>(new FunctionInvoker(std::move(body))),
                     CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                     Catch::NameAndTags{Catch::StringRef(kept_name), Catch::StringRef(kept_tags)});
#else
  Catch::AutoReg reg(new FunctionInvoker(std::move(body)), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                     Catch::NameAndTags{Catch::StringRef(kept_name), Catch::StringRef(kept_tags)});
#endif
  (void)reg;
  return true;
}

std::uint64_t seed(std::uint64_t base) {
  const char* text = std::getenv("COURSE_GRADING_SEED");
  if (text == nullptr || *text == '\0') return base;
  char* end = nullptr;
  const unsigned long long grading = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') {
    std::fprintf(stderr, "COURSE_GRADING_SEED='%s' is not a whole number: the public inputs are used\n", text);
    return base;
  }
  return mix64(grading ^ 0xC0FFEE5EEDull, base);
}

std::vector<std::size_t> awkward_sizes(std::size_t block, std::uint64_t seed_base) {
  const std::uint64_t seed = course::test::seed(seed_base);
  // COURSE_TEST_SMALL=1 (set by tools/gpu_check.sh under compute-sanitizer, which is slow) keeps
  // every awkward edge but shrinks the large sizes.
  const char* small_env = std::getenv("COURSE_TEST_SMALL");
  const bool small = small_env != nullptr && std::strcmp(small_env, "0") != 0;
  const std::size_t big = small ? (std::size_t{1} << 16) + 3 : (std::size_t{1} << 20) + 3;
  const std::size_t range = small ? (std::size_t{1} << 16) : (std::size_t{1} << 22);
  const std::size_t random_n = 2 + static_cast<std::size_t>(mix64(seed, 0) % (range - 1));
  return {0, 1, block - 1, block, block + 1, big, random_n};
}

DotInputs make_dot_inputs(std::size_t n, std::uint64_t seed_base) { return HostDotInputs(n, course::test::seed(seed_base)); }

struct StreamGate::State {
  std::atomic<bool> open{false};
  std::atomic<bool> timed_out{false};
  std::chrono::steady_clock::time_point until;
};

StreamGate::StreamGate(double limit_s) : state_(std::make_shared<State>()) {
  state_->until = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit_s));
}

StreamGate::~StreamGate() { open(); }

void StreamGate::hold(cudaStream_t stream) {
  // The host function owns a reference to the state: it may run after the gate is destroyed.
  auto* keep = new std::shared_ptr<State>(state_);
  const cudaError_t code = cudaLaunchHostFunc(
      stream,
      [](void* data) {
        std::unique_ptr<std::shared_ptr<State>> s(static_cast<std::shared_ptr<State>*>(data));
        while (!(*s)->open.load(std::memory_order_acquire)) {
          if (std::chrono::steady_clock::now() > (*s)->until) {
            (*s)->timed_out = true;
            return;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
      },
      keep);
  if (code != cudaSuccess) {
    delete keep;
    check_cuda(code, "cudaLaunchHostFunc", __FILE__, __LINE__);
  }
}

void StreamGate::open() noexcept { state_->open.store(true, std::memory_order_release); }

bool StreamGate::timed_out() const { return state_->timed_out.load(); }

struct Caller::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;
};

Caller::Caller(std::function<void()> call) : state_(std::make_shared<State>()) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice", __FILE__, __LINE__);
  thread_ = std::thread([s = state_, call = std::move(call), device] {
    std::exception_ptr error;
    try {
      check_cuda(cudaSetDevice(device), "cudaSetDevice", __FILE__, __LINE__);  // the caller's device
      call();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> guard(s->mutex);
    s->error = error;
    s->done = true;
    s->done_cv.notify_all();
  });
}

Caller::~Caller() {
  if (thread_.joinable()) thread_.join();
}

bool Caller::returned_within(int wait_ms) const {
  std::unique_lock<std::mutex> guard(state_->mutex);
  return state_->done_cv.wait_for(guard, std::chrono::milliseconds(wait_ms), [&] { return state_->done; });
}

void Caller::finish() {
  if (thread_.joinable()) thread_.join();
  if (state_->error) std::rethrow_exception(state_->error);
}

std::string explain(const Verdict& v, std::size_t n, const std::string& version, const std::string& hint) {
  std::ostringstream out;
  out << version << " at n = " << n << ": " << v.message;
  if (!hint.empty()) out << "\nHint: " << hint;
  return out.str();
}

}  // namespace course::test
