#include "course/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "course/check.hpp"
#include "course/context.hpp"
#include "course/device.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"

namespace course {

std::string about(std::string_view text) {
  if (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  std::string out(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::vector<std::size_t> sweep_sizes(const Options& opt, const std::string& sizes_text,
                                     std::vector<std::size_t> defaults, SizesFirst first, bool sorted) {
  std::vector<std::size_t> sizes = std::move(defaults);
  const bool from_n = opt.n_given && (first == SizesFirst::n || sizes_text.empty());
  if (from_n) {
    sizes = {opt.n};
  } else if (!sizes_text.empty()) {
    sizes = parse_sizes(sizes_text);
  }
  if (sorted) {
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  }
  return sizes;
}

void print_gpu(Context& ctx, const std::string& tail) {
  const DeviceFacts& facts = ctx.facts();
  const Roofline& roof = ctx.roofline();
  std::printf("GPU: %s\nMeasured read roofline %.0f GB/s (%.0f%% of the %.0f GB/s peak)%s",
              describe_device(facts).c_str(), roof.read_gbps, 100 * roof.read_gbps / facts.peak_gbps, facts.peak_gbps,
              tail.c_str());
}

Measurement measured(std::string_view version, std::string config, std::size_t n, double bytes,
                     const std::vector<double>& samples, double roofline_gbps, double rel_error, bool valid) {
  return measured(version, std::move(config), n, bytes, summarize(samples), roofline_gbps, rel_error, valid);
}

Measurement measured(std::string_view version, std::string config, std::size_t n, double bytes, const Stats& ms,
                     double roofline_gbps, double rel_error, bool valid) {
  Measurement m;
  m.version = std::string(version);
  m.config = std::move(config);
  m.n = n;
  m.bytes = bytes;
  m.ms = ms;
  m.roofline_gbps = roofline_gbps;
  m.rel_error = rel_error;
  m.valid = valid;
  return m;
}

Verdict ran_verdict(double got) {
  Verdict ran;
  ran.ok = std::isfinite(got);
  ran.got = got;
  ran.rel_error = std::nan("");  // not a dot product: no error to report (an empty cell)
  ran.message = ran.ok ? "" : "the speed-of-light kernel left its result unwritten (NaN)";
  return ran;
}

std::vector<std::vector<double>> time_round_robin(std::size_t count, const std::function<void(std::size_t)>& call,
                                                  int warmup, int reps, cudaStream_t stream,
                                                  const std::function<void(std::size_t)>& after) {
  for (int w = 0; w < warmup; ++w)
    for (std::size_t i = 0; i < count; ++i) {
      call(i);
      if (after) {
        CUDA_CHECK(cudaStreamSynchronize(stream));
        after(i);
      }
    }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::vector<double>> samples(count);
  EventTimer timer(stream);
  for (int r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < count; ++i) {
      timer.start();
      call(i);
      samples[i].push_back(timer.stop_ms());  // waits: the next call starts on an idle GPU
      if (after) after(i);                    // outside the events: not timed
    }
  return samples;
}

Verdict check_timed_calls(const std::vector<double>& results, std::size_t warmup,
                          const std::function<Verdict(std::size_t, double)>& check,
                          const std::function<bool(std::size_t)>& changed) {
  Verdict worst;
  worst.ok = true;
  bool first = true;
  const std::size_t timed = results.size() > warmup ? results.size() - warmup : 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    Verdict v = check(i, results[i]);
    if (!v.ok) {
      const bool w = i < warmup;
      v.message = std::string(w ? "warm-up call " : "timed call ") + std::to_string(w ? i + 1 : i - warmup + 1) +
                  " of " + std::to_string(w ? warmup : timed) + (changed && changed(i) ? " (x changed)" : "") +
                  ": " + v.message;
      return v;
    }
    if (first || v.rel_error > worst.rel_error || std::isnan(v.rel_error)) worst = v;
    first = false;
  }
  return worst;
}

TimedInputChange timed_input_change(const Reference& ref, std::size_t n,
                                    const std::function<std::pair<float, float>(std::size_t)>& xy_at) {
  TimedInputChange c;
  c.base = ref;
  c.changed = ref;
  for (std::size_t k = 0; k < 64 && n / 2 + k < n; ++k) {
    const auto [x, y] = xy_at(n / 2 + k);
    if (!(std::fabs(y) >= 0.125f) || !std::isfinite(x)) continue;
    // 64 error bounds of the unchanged input (at least 1 in x): far outside the bound of either input.
    const double step = std::max(1.0, 64.0 * dot_error_bound(ref) / std::fabs(static_cast<double>(y)));
    c.at = n / 2 + k;
    c.original = x;
    c.spike = static_cast<float>(static_cast<double>(x) + step);
    const double old_term = static_cast<double>(x) * y, new_term = static_cast<double>(c.spike) * y;
    c.changed.value = ref.value - old_term + new_term;
    c.changed.sum_abs = ref.sum_abs - std::fabs(old_term) + std::fabs(new_term);
    c.active = c.spike != c.original && std::isfinite(c.spike);
    return c;
  }
  return c;
}

void settle(const std::function<void()>& call, cudaStream_t stream, double ms) {
  const auto start = std::chrono::steady_clock::now();
  do {
    call();
    CUDA_CHECK(cudaStreamSynchronize(stream));
  } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < ms);
}

std::size_t copies_beyond_l2(double bytes_per_copy, std::size_t l2_bytes) {
  const double bytes = std::max(1.0, bytes_per_copy);
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(2.0 * static_cast<double>(l2_bytes) / bytes)));
}

void replicate(void* d_base, std::size_t stride, std::size_t bytes, std::size_t copies, cudaStream_t stream) {
  auto* base = static_cast<unsigned char*>(d_base);
  for (std::size_t s = 1; s < copies; ++s)
    CUDA_CHECK(cudaMemcpyAsync(base + s * stride, base, bytes, cudaMemcpyDeviceToDevice, stream));
}

void write_csvs(const std::string& csv, const Table& main, const std::vector<std::pair<std::string, const Table*>>& beside) {
  if (csv.empty()) return;
  main.write_csv(csv);
  for (const auto& [what, table] : beside)
    if (table != nullptr) table->write_csv(csv_beside(csv, what));
}

Table rows_where(const Table& table, const std::string& col, long long value) {
  Table out(table.columns());
  const auto at = std::find(table.columns().begin(), table.columns().end(), col) - table.columns().begin();
  for (const auto& row : table.rows())
    if (const auto* v = std::get_if<long long>(&row[at]); v != nullptr && *v == value) out.add_row(row);
  return out;
}

int exit_code(const std::string& name, const std::set<std::string>& failed, const std::string& what) {
  if (failed.empty()) return kExitOk;
  std::cerr << name << ": " << failed.size() << " " << what << ":";
  for (const auto& f : failed) std::cerr << " " << f;
  std::cerr << "\n";
  return kExitFailure;
}

}  // namespace course
