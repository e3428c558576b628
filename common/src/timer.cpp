#include "course/timer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace course {

EventTimer::EventTimer(cudaStream_t stream) : stream_(stream) {
  CUDA_CHECK(cudaEventCreate(&start_));
  try {
    CUDA_CHECK(cudaEventCreate(&stop_));
  } catch (...) {
    cudaEventDestroy(start_);
    throw;
  }
}

EventTimer::~EventTimer() {
  // Destructors must not throw; a failure to destroy an event leaks a handle, nothing more.
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

void EventTimer::start() { CUDA_CHECK(cudaEventRecord(start_, stream_)); }

float EventTimer::stop_ms() {
  record_stop();
  return elapsed_ms();
}

void EventTimer::record_stop() { CUDA_CHECK(cudaEventRecord(stop_, stream_)); }

float EventTimer::elapsed_ms() {
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

namespace {

// A setting of the environment as a number, or `fallback` when unset or not a number >= 0.
double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return (end != text && *end == '\0' && std::isfinite(value) && value >= 0) ? value : fallback;
}

}  // namespace

StoppingRule StoppingRule::from_environment() {
  StoppingRule rule;
  rule.min_samples = static_cast<int>(env_number("COURSE_MIN_SAMPLES", rule.min_samples));
  rule.max_noise = env_number("COURSE_MAX_NOISE", rule.max_noise);
  rule.max_seconds = env_number("COURSE_MAX_SECONDS", rule.max_seconds);
  return rule;
}

bool StoppingRule::enough(const std::vector<double>& samples) const {
  const std::size_t count = samples.size();
  if (count < 2) return false;                            // a median and a spread need two
  if (max_seconds <= 0 && max_noise <= 0) return false;  // the rule is off: every rep
  const double total_ms = std::accumulate(samples.begin(), samples.end(), 0.0);
  // nvbench's timeout: a row whose samples take seconds each stops at two once three budgets are
  // spent, min_samples or not (chapter 01's CPU sqrt rows took 5-8 s a sample).
  if (max_seconds > 0 && total_ms >= 3e3 * max_seconds) return true;
  if (count < static_cast<std::size_t>(std::max(min_samples, 2))) return false;
  if (max_seconds > 0 && total_ms >= 1e3 * max_seconds) return true;
  const double mean = total_ms / static_cast<double>(count);
  double squares = 0;
  for (double x : samples) squares += (x - mean) * (x - mean);
  const double sd = std::sqrt(squares / static_cast<double>(count - 1));
  return max_noise > 0 && mean > 0 && sd / mean / std::sqrt(static_cast<double>(count)) <= max_noise;
}

}  // namespace course
