// Tests of the common kit: statistics, sizes, tables, the reference and its error bound, random
// inputs (host and device agree), the timer, device facts, the checks' error reporting, and
// course::Context (streams, scratch, occupancy, moves). Every GPU test makes its own Context.
#include <algorithm>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/device.hpp"
#include "course/driver.hpp"
#include "course/dtype.hpp"
#include "course/inputs.hpp"
#include "course/pinned.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/stream.hpp"
#include "course/table.hpp"
#include "course/timer.hpp"
#include "support/course_test.hpp"

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("common: summarize gives median, mean, sd, min, max", "[common]") {
  const auto s = course::summarize({5.0, 1.0, 3.0, 2.0, 4.0});
  CHECK(s.count == 5);
  CHECK(s.median == 3.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 5.0);
  CHECK_THAT(s.mean, WithinAbs(3.0, 1e-12));
  CHECK_THAT(s.sd, WithinAbs(std::sqrt(2.5), 1e-12));
  CHECK(course::summarize({4.0, 1.0}).median == 2.5);
  CHECK(course::summarize({7.0}).sd == 0.0);
  CHECK_THROWS_AS(course::summarize({}), course::UsageError);
}

TEST_CASE("common: parse_size accepts the usual spellings and rejects the rest", "[common]") {
  CHECK(course::parse_size("1048576") == 1048576u);
  CHECK(course::parse_size("2^20") == (std::size_t{1} << 20));
  CHECK(course::parse_size("1<<24") == (std::size_t{1} << 24));
  CHECK(course::parse_size("2^20+3") == (std::size_t{1} << 20) + 3);
  CHECK(course::parse_size("2^10-1") == 1023u);
  CHECK(course::parse_size("1e6") == 1000000u);
  CHECK(course::parse_size("16M") == 16000000u);
  CHECK(course::parse_size("16Mi") == (std::size_t{16} << 20));
  CHECK(course::parse_size("0") == 0u);
  CHECK_THROWS_AS(course::parse_size(""), course::UsageError);
  CHECK_THROWS_AS(course::parse_size("-5"), course::UsageError);
  CHECK_THROWS_AS(course::parse_size("abc"), course::UsageError);
  CHECK_THROWS_AS(course::parse_size("2^70"), course::UsageError);
  CHECK_THROWS_AS(course::parse_size("1-2"), course::UsageError);
  CHECK(course::format_size(std::size_t{1} << 20) == "2^20");
  CHECK(course::format_size(1000) == "1000");
}

TEST_CASE("common: a table prints aligned and writes CSV with named columns", "[common]") {
  course::Table t({"version", "n", "gbps"});
  t.add_row({std::string("a,b"), 3LL, 1.5});
  t.add_row({std::string("plain"), 12LL, std::nan("")});
  CHECK_THROWS_AS(t.add_row({std::string("short")}), course::UsageError);
  std::ostringstream out;
  t.print(out);
  CHECK(out.str().find("version") == 0);
  CHECK(out.str().find("1.5") != std::string::npos);
  const std::string path = "test_common_table.csv";
  t.write_csv(path);
  std::ifstream in(path);
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  CHECK(header == "version,n,gbps");
  CHECK(row1 == "\"a,b\",3,1.5");
  CHECK(row2 == "plain,12,");  // NaN is missing: an empty field
  std::remove(path.c_str());
  CHECK(course::csv_beside("out/05.csv", "sweep") == "out/05_sweep.csv");
  CHECK(course::csv_beside("results", "sweep") == "results_sweep.csv");
}

TEST_CASE("common: table column names are snake_case", "[common]") {
  CHECK_NOTHROW(course::Table({"version", "pct_roofline", "g80_x_prev"}));
  CHECK_THROWS_AS(course::Table({"what it measures"}), std::invalid_argument);
  CHECK_THROWS_AS(course::Table({"Version"}), std::invalid_argument);
  CHECK_THROWS_AS(course::Table({"speedup-vs"}), std::invalid_argument);
  CHECK_THROWS_AS(course::Table({"n", ""}), std::invalid_argument);
  CHECK_THROWS_AS(course::Table({"2x"}), std::invalid_argument);
}

TEST_CASE("common: a table of the link's share names its column pct_link, on screen too", "[common]") {
  const auto has = [](const std::vector<std::string>& cols, const std::string& name) {
    return std::find(cols.begin(), cols.end(), name) != cols.end();
  };
  const course::Table link = course::measurement_table(course::Share::link);
  CHECK(has(link.columns(), "pct_link"));
  CHECK_FALSE(has(link.columns(), "pct_roofline"));
  CHECK(link.columns().size() == course::measurement_table().columns().size());
  CHECK(has(course::measurement_screen_columns(course::Share::link), "pct_link"));
  CHECK_FALSE(has(course::measurement_screen_columns(course::Share::link), "pct_roofline"));
  CHECK(has(course::measurement_screen_columns(), "pct_roofline"));
}

TEST_CASE("common: measurement rows carry GB/s and % of roofline", "[common]") {
  course::Table t = course::measurement_table();
  course::Measurement m;
  m.version = "v1";
  m.n = 1000;
  m.bytes = 2e9;
  m.ms = course::summarize({1.0, 1.0, 1.0});
  m.roofline_gbps = 4000;
  m.valid = true;
  course::add_measurement(t, m);
  const auto& row = t.rows().at(0);
  const auto col = [&](const std::string& name) {
    for (std::size_t c = 0; c < t.columns().size(); ++c)
      if (t.columns()[c] == name) return c;
    FAIL("no column " << name);
    return std::size_t{0};
  };
  CHECK_THAT(std::get<double>(row[col("gbps")]), WithinRel(2000.0, 1e-12));
  CHECK_THAT(std::get<double>(row[col("pct_roofline")]), WithinRel(50.0, 1e-12));
  CHECK(std::get<long long>(row[col("valid")]) == 1);
}

TEST_CASE("common: the reference dot is exact on small integers and propagates NaN and inf", "[common]") {
  const float x[] = {1, 2, 3, -4};
  const float y[] = {5, 6, 7, 8};
  const auto ref = course::reference_dot(x, y, 4);
  CHECK(ref.value == 1 * 5 + 2 * 6 + 3 * 7 - 4 * 8);
  CHECK(ref.sum_abs == 5 + 12 + 21 + 32);
  const float xn[] = {1, NAN};
  CHECK(std::isnan(course::reference_dot(xn, y, 2).value));
  const float xi[] = {1, INFINITY};
  CHECK(std::isinf(course::reference_dot(xi, y, 2).value));
  CHECK(course::reference_dot(x, y, 0).value == 0.0);
}

TEST_CASE("common: the error bound accepts float rounding and rejects real mistakes", "[common]") {
  const std::size_t n = 1 << 16;
  const auto x = course::random_vector(n, 1);
  const auto y = course::random_vector(n, 2);
  const auto ref = course::reference_dot(x.data(), y.data(), n);
  // A plain float loop is the least accurate order; it must pass.
  float acc = 0;
  for (std::size_t i = 0; i < n; ++i) acc += x[i] * y[i];
  const auto good = course::check_dot(acc, ref);
  CHECK(good.ok);
  INFO(good.message);
  // Dropping one typical element, doubling, NaN and inf must fail.
  float dropped = 0;
  for (std::size_t i = 1; i < n; ++i) dropped += x[i] * y[i];
  (void)dropped;  // one element of size ~1/4 is below the bound at n = 2^16 (see reference.hpp)
  CHECK_FALSE(course::check_dot(2.0 * ref.value, ref).ok);
  CHECK_FALSE(course::check_dot(NAN, ref).ok);
  CHECK_FALSE(course::check_dot(INFINITY, ref).ok);
  CHECK(course::check_dot(0.0, course::Reference{0.0, 0.0, 0}).ok);
  CHECK_FALSE(course::check_dot(1e-30, course::Reference{0.0, 0.0, 0}).ok);
  // The bound grows like sqrt(n), not like n.
  const double b1 = course::dot_error_bound({0, 1.0, 1 << 10});
  const double b2 = course::dot_error_bound({0, 1.0, 1 << 20});
  CHECK_THAT(b2 / b1, WithinRel(32.0, 0.01));
}

TEST_CASE("common: planted spikes are too large for the bound to absorb", "[common]") {
  for (std::size_t n : {std::size_t{64}, (std::size_t{1} << 20) + 3, std::size_t{1} << 24}) {
    auto x = course::random_vector(n, 7);
    auto y = course::random_vector(n, 8);
    const auto at = course::plant_spikes(x, y);
    REQUIRE(at.size() >= 3);
    const auto ref = course::reference_dot(x.data(), y.data(), n);
    const double bound = course::dot_error_bound(ref);
    for (std::size_t i : at) {
      INFO("n = " << n << ", spike at " << i);
      // Dropping this one product must fail the check.
      CHECK(std::fabs(double(x[i]) * y[i]) > 1.5 * bound);
      CHECK_FALSE(course::check_dot(ref.value - double(x[i]) * y[i], ref).ok);
    }
    // An empty exercise hole returns 0 (or leaves NaN): neither may pass.
    CHECK_FALSE(course::check_dot(0.0, ref).ok);
    CHECK_FALSE(course::check_dot(NAN, ref).ok);
    CHECK((n < (std::size_t{1} << 21) ? at.size() == 64 : at.size() < 64));
  }
  const auto in = course::test::make_dot_inputs((std::size_t{1} << 20) + 3, 7);
  CHECK(std::fabs(in.x[0]) > 1.0f);
  const auto sizes = course::test::awkward_sizes(256, 3);
  REQUIRE(sizes.size() == 7);
  CHECK(sizes[0] == 0);
  CHECK(sizes[2] == 255);
  CHECK(sizes[4] == 257);
}

TEST_CASE("common: random inputs are seeded, signed and in range", "[common]") {
  const auto a = course::random_vector(1000, 42);
  const auto b = course::random_vector(1000, 42);
  const auto c = course::random_vector(1000, 43);
  CHECK(a == b);
  CHECK(a != c);
  int negative = 0;
  for (float v : a) {
    REQUIRE(v >= -1.0f);
    REQUIRE(v < 1.0f);
    negative += v < 0;
  }
  CHECK(negative > 400);
  CHECK(negative < 600);
}

TEST_CASE("common: device and host random streams agree", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t n = (1 << 20) + 3;
  course::DeviceBuffer<float> d(n);
  course::fill_random_device(d.data(), n, 99, -2.0f, 3.0f, ctx.stream());
  const auto host = course::random_vector(n, 99, -2.0f, 3.0f);
  CHECK(d.download(ctx.stream()) == host);
}

TEST_CASE("common: DeviceBuffer's stream copies round-trip on a context's stream", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const auto host = course::random_vector((1 << 16) + 5, 3);
  course::DeviceBuffer<float> d(host, ctx.stream());  // enqueued on the stream; host outlives it
  CHECK(d.download(ctx.stream()) == host);
  course::DeviceBuffer<float> e(host.size());
  e.fill_bytes(0, ctx.stream());
  e.upload_async(host.data(), host.size(), ctx.stream());
  std::vector<float> back(host.size());
  e.download_async(back.data(), back.size(), ctx.stream());
  ctx.synchronize();
  CHECK(back == host);
  course::DeviceBuffer<float> f(host);  // the synchronous form: complete on return, usable from any stream
  CHECK(f.download(ctx.stream()) == host);
}

// [api_error]: memcheck reports the deliberately failing cudaMalloc; gpu_check skips it there.
TEST_CASE("common: CHECK throws a CudaError naming the call", "[common][gpu][api_error]") {
  COURSE_REQUIRE_GPU();
  void* p = nullptr;
  try {
    CUDA_CHECK(cudaMalloc(&p, std::size_t{1} << 62));
    FAIL("an impossible cudaMalloc did not throw");
  } catch (const course::CudaError& e) {
    CHECK(e.code() == cudaErrorMemoryAllocation);
    CHECK_THAT(std::string(e.what()), course::test::contains("cudaMalloc"));
  }
  CHECK_THROWS_AS(course::require_fits(std::size_t{1} << 60, "a test"), course::DoesNotFitError);
}

// [slow]: compute-sanitizer runs skip it. A bandwidth measured under instrumentation means
// nothing, and the sanitizer's shadow memory cannot cover the 1 GiB the roofline streams.
TEST_CASE("common: device facts and the measured roofline are plausible", "[common][gpu][slow][exclusive]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const auto& f = ctx.facts();
  CHECK(f.id == 0);
  CHECK(f.sm_count > 0);
  CHECK(f.l2_bytes > 0);
  CHECK(f.peak_gbps > 0);
  const auto& r = ctx.roofline();
  INFO(course::describe_device(f) << "; read roofline " << r.read_gbps << " GB/s, copy " << r.copy_gbps << " GB/s");
  CHECK(r.read_gbps > 0.3 * f.peak_gbps);
  CHECK(r.read_gbps <= 1.05 * f.peak_gbps);
  CHECK(r.copy_gbps > 0);
}

TEST_CASE("common: the event timer measures GPU time, not launch time", "[common][gpu][exclusive]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t n = std::size_t{1} << 28;
  course::DeviceBuffer<float> d(n);
  course::EventTimer timer(ctx.stream());
  timer.start();
  d.fill_bytes(0, ctx.stream());
  const float ms = timer.stop_ms();
  // Writing 1 GiB takes at least 1 GiB / (peak bandwidth); a timer that measured only the
  // (asynchronous) enqueue would report microseconds.
  const double floor_ms = d.bytes() / (ctx.facts().peak_gbps * 1e9) * 1e3;
  CHECK(ms >= 0.9 * floor_ms);
}

TEST_CASE("common: an unwritable --csv is refused before any work, a writable one is left as it was", "[common]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "course_test_csv_check";
  fs::remove_all(dir);
  // A new file in a new folder: accepted, and nothing is left behind but the folder.
  const fs::path fresh = dir / "sub" / "out.csv";
  CHECK_NOTHROW(course::check_csv_writable(fresh.string()));
  CHECK_FALSE(fs::exists(fresh));
  // An existing file keeps its content.
  { std::ofstream(dir / "old.csv") << "keep\n"; }
  CHECK_NOTHROW(course::check_csv_writable((dir / "old.csv").string()));
  std::ifstream in(dir / "old.csv");
  std::string line;
  std::getline(in, line);
  CHECK(line == "keep");
  // A folder, and a path below a regular file, are refused with a UsageError (exit code 2).
  CHECK_THROWS_AS(course::check_csv_writable(dir.string()), course::UsageError);
  CHECK_THROWS_AS(course::check_csv_writable((dir / "old.csv" / "x.csv").string()), course::UsageError);
  fs::remove_all(dir);
}

TEST_CASE("common: an App refuses an unwritable --csv with exit code 2 before running its body", "[common]") {
  course::App app("test_app", "test", 16);
  bool ran = false;
  std::string bad = (std::filesystem::temp_directory_path() / "course_no_such_file" / "x.csv").string();
  { std::ofstream(std::filesystem::temp_directory_path() / "course_no_such_file") << "a file, not a folder\n"; }
  std::vector<std::string> args = {"test_app", "--csv", bad};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  const int rc = app.run(static_cast<int>(argv.size()), argv.data(), [&](const course::Options&) {
    ran = true;
    return 0;
  }, false);
  CHECK(rc == course::kExitUsage);
  CHECK_FALSE(ran);
  std::filesystem::remove(std::filesystem::temp_directory_path() / "course_no_such_file");
}

namespace {
// Runs `app` on `args` with a body that records the options it saw; returns the exit code.
int run_app(course::App& app, std::vector<std::string> args, course::Options* seen = nullptr) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return app.run(static_cast<int>(argv.size()), argv.data(), [&](const course::Options& opt) {
    if (seen) *seen = opt;
    return 0;
  }, false);
}
}  // namespace

TEST_CASE("common: parse_sizes reads a comma list and names the option when it refuses one", "[common]") {
  CHECK(course::parse_sizes("2^20,1024, 3") == std::vector<std::size_t>{std::size_t{1} << 20, 1024, 3});
  CHECK(course::parse_sizes("2^26,") == std::vector<std::size_t>{std::size_t{1} << 26});
  CHECK_THROWS_AS(course::parse_sizes(""), course::UsageError);
  CHECK_THROWS_AS(course::parse_sizes("2^20,0"), course::UsageError);
  CHECK_THROWS_AS(course::parse_sizes("2^20,,2^22"), course::UsageError);
  CHECK_THROWS_AS(course::parse_sizes("2^20,lots"), course::UsageError);
  try {
    course::parse_sizes("many", "--dot-sizes");
    FAIL("parse_sizes accepted 'many'");
  } catch (const course::UsageError& e) {
    CHECK(std::string(e.what()).find("--dot-sizes") != std::string::npos);
  }
}

TEST_CASE("common: an App takes its versions from a registry and checks --sizes while parsing", "[common]") {
  using Fn = int (*)();
  const std::vector<course::Version<Fn>> registry = {{"first", "the first", nullptr}, {"second", "the second", nullptr, true}};
  course::App app("test_app", "test", 16);
  app.set_versions(registry);
  std::string sizes;
  app.add_sizes_option(sizes, "sizes");
  CHECK(run_app(app, {"test_app", "--kernel", "second"}) == course::kExitOk);
  course::App other("test_app", "test", 16);
  other.set_versions(registry);
  CHECK(run_app(other, {"test_app", "--kernel", "third"}) == course::kExitUsage);
  // Several versions, separated by commas: each must be known; an empty piece is refused.
  course::App two("test_app", "test", 16);
  two.set_versions(registry);
  CHECK(run_app(two, {"test_app", "--kernel", "first,second"}) == course::kExitOk);
  for (const char* bad : {"first,third", "first,", ",second"}) {
    course::App refused("test_app", "test", 16);
    refused.set_versions(registry);
    CHECK(run_app(refused, {"test_app", "--kernel", bad}) == course::kExitUsage);
  }
  course::Options opt;
  CHECK(opt.selects("anything"));
  opt.kernel = "first,second";
  CHECK(opt.selects("first"));
  CHECK(opt.selects("second"));
  CHECK_FALSE(opt.selects("firs"));
  CHECK_FALSE(opt.selects("first,second"));
  const auto chosen = course::select_versions(registry, opt);
  REQUIRE(chosen.size() == 2);
  opt.kernel = "second";
  REQUIRE(course::select_versions(registry, opt).size() == 1);
  CHECK(std::string(course::select_versions(registry, opt)[0]->name) == "second");
  course::App bad_sizes("test_app", "test", 16);
  std::string sizes2;
  bad_sizes.add_sizes_option(sizes2, "sizes");
  std::ostringstream err;
  std::streambuf* const saved = std::cerr.rdbuf(err.rdbuf());
  const int code = run_app(bad_sizes, {"test_app", "--sizes", "2^20,0"});
  std::cerr.rdbuf(saved);
  CHECK(code == course::kExitUsage);
  INFO("stderr: " << err.str());
  CHECK(err.str().find("--sizes: '0' is not a size of at least 1") != std::string::npos);
  CHECK(err.str().find("--sizes: --sizes") == std::string::npos);  // the option is named once
}

TEST_CASE("common: an App says whether --n and --reps were given", "[common]") {
  course::Options seen;
  course::App a("test_app", "test", 16);
  REQUIRE(run_app(a, {"test_app"}, &seen) == course::kExitOk);
  CHECK_FALSE(seen.n_given);
  CHECK(seen.reps_given == 0);
  CHECK(seen.n == 16);
  course::App b("test_app", "test", 16);
  REQUIRE(run_app(b, {"test_app", "--n", "2^10", "--reps", "7"}, &seen) == course::kExitOk);
  CHECK(seen.n_given);
  CHECK(seen.reps_given == 1);
  CHECK(seen.n == 1024);
  CHECK(seen.reps == 7);
}

TEST_CASE("common: dot inputs are made one way: x from the seed, y from seed_y, spikes, the reference", "[common]") {
  const std::size_t n = (std::size_t{1} << 16) + 3;
  const course::HostDotInputs in(n, 77);
  REQUIRE(in.n == n);
  REQUIRE(in.x.size() == n);
  REQUIRE(in.y.size() == n);
  CHECK(course::seed_y(77) != 77);
  CHECK(course::seed_y(77) != 78);  // not seed + 1: y of one seed is never x of the next
  auto x = course::random_vector(n, 77);
  auto y = course::random_vector(n, course::seed_y(77));
  const auto spikes = course::plant_spikes(x, y);
  CHECK_FALSE(spikes.empty());
  CHECK(in.x == x);
  CHECK(in.y == y);
  const course::Reference ref = course::reference_dot(x.data(), y.data(), n);
  CHECK(in.ref.value == ref.value);
  CHECK(in.ref.sum_abs == ref.sum_abs);
  CHECK(course::HostDotInputs(n, 78).x != in.x);
}

TEST_CASE("common: device dot inputs hold the host inputs on the device, copied on the given stream", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t n = (std::size_t{1} << 20) + 3;
  course::DeviceDotInputs in(n, 5, ctx.stream());
  CHECK(in.d_result.size() == 1);
  CHECK(in.d_x.download(ctx.stream()) == in.x);
  CHECK(in.d_y.download(ctx.stream()) == in.y);
  CHECK(in.x == course::HostDotInputs(n, 5).x);
}

TEST_CASE("common: without a GPU the message is one plain sentence with the CUDA error in parentheses", "[common]") {
  CHECK(course::no_gpu_message("cudaErrorNoDevice") == "no NVIDIA GPU or driver found (cudaErrorNoDevice)");
  std::string why;
  if (course::gpu_available(&why)) return;  // the message is only seen without a GPU
  CHECK_FALSE(why.empty());
  try {
    course::require_gpu();
    FAIL("require_gpu did not throw without a GPU");
  } catch (const course::NoGpuError& e) {
    CHECK(std::string(e.what()) == course::no_gpu_message(why));
  }
}

TEST_CASE("common: a host buffer larger than the machine is refused with DoesNotFitError", "[common]") {
  CHECK_NOTHROW(course::require_host_fits(1024, "a small buffer"));
  try {
    course::require_host_fits(std::size_t{1} << 62, "a huge buffer");
    FAIL("require_host_fits accepted 4 EiB");
  } catch (const course::DoesNotFitError& e) {
    CHECK(std::string(e.what()).find("host memory") != std::string::npos);
  }
}

TEST_CASE("common: COURSE_DEVICE_MEMORY_LIMIT makes a large card read as a small one", "[common]") {
  constexpr std::size_t gib = std::size_t{1} << 30;
  // No limit: what the driver says.
  CHECK(course::limited_free_bytes(100 * gib, 140 * gib, 0) == 100 * gib);
  // A 15 GiB card with 40 GiB in use elsewhere on the 140 GiB one: nothing left.
  CHECK(course::limited_free_bytes(100 * gib, 140 * gib, 15 * gib) == 0);
  // An idle card: the limit, less what this process holds, so an allocation still shows as a drop.
  CHECK(course::limited_free_bytes(139 * gib, 140 * gib, 15 * gib) == 14 * gib);
  CHECK(course::limited_free_bytes(137 * gib, 140 * gib, 15 * gib) == 12 * gib);
  // A limit above the card changes nothing.
  CHECK(course::limited_free_bytes(100 * gib, 140 * gib, 1000 * gib) == 100 * gib);
  CHECK(course::parse_byte_size("15Gi", "X") == 15 * gib);
  CHECK(course::parse_byte_size("16G", "X") == 16 * gib);
  CHECK(course::parse_byte_size("4096", "X") == 4096);
  CHECK(course::parse_byte_size("8Mi", "X") == (std::size_t{8} << 20));
  for (const char* bad : {"", "15 GiB", "-1", "1.5G", "15GB", "99999999999999999999", "17179869184Gi"})
    CHECK_THROWS_AS(course::parse_byte_size(bad, "COURSE_DEVICE_MEMORY_LIMIT"), course::UsageError);
}

TEST_CASE("common: ScratchLayout aligns every region and adds them up", "[common]") {
  course::ScratchLayout layout;
  CHECK(layout.bytes() == 0);
  CHECK(layout.add(10) == 0);           // the first region starts at 0
  CHECK(layout.add(4) == 256);          // default alignment 256 bytes
  CHECK(layout.add(100, 1024) == 1024);
  CHECK(layout.bytes() == 1124);
  CHECK(layout.add(1, 1) == 1124);
  CHECK(layout.add(8, 8) == 1128);
  CHECK(layout.add(0, 64) == 1152);     // an empty region still gets an aligned offset
  CHECK(layout.bytes() == 1152);
  CHECK_THROWS_AS(layout.add(5, 3), course::UsageError);
  CHECK_THROWS_AS(layout.add(5, 0), course::UsageError);
}

TEST_CASE("common: two contexts on one device have their own stream and cuBLAS handle", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context a(0), b(0);
  CHECK(a.device() == 0);
  CHECK(b.device() == 0);
  CHECK(a.stream() != nullptr);  // never the legacy default stream
  CHECK(a.stream() != b.stream());
  CHECK(a.facts().sm_count == b.facts().sm_count);
  CHECK(a.cublas() != nullptr);
  CHECK(a.cublas() == a.cublas());  // made once, then kept
  CHECK(a.cublas() != b.cublas());
}

TEST_CASE("common: Context's scratch arena is reserved once, grows, never shrinks", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  CHECK(ctx.scratch_bytes() == 0);
  CHECK_THROWS_AS(ctx.scratch(1), course::UsageError);  // nothing reserved: a bug to report
  try {
    ctx.scratch(4096);
  } catch (const course::UsageError& e) {
    CHECK_THAT(std::string(e.what()), course::test::contains("reserve_scratch"));
  }
  course::ScratchLayout layout;
  const std::size_t a = layout.add(1000 * sizeof(float));
  const std::size_t b = layout.add(3 * sizeof(double), 64);
  ctx.reserve_scratch(layout.bytes());
  CHECK(ctx.scratch_bytes() == layout.bytes());
  void* base = ctx.scratch(layout.bytes());
  REQUIRE(base != nullptr);
  // The regions are usable device memory, on the context's stream.
  CHECK(cudaMemsetAsync(static_cast<char*>(base) + a, 0, 1000 * sizeof(float), ctx.stream()) == cudaSuccess);
  CHECK(cudaMemsetAsync(static_cast<char*>(base) + b, 0, 3 * sizeof(double), ctx.stream()) == cudaSuccess);
  ctx.synchronize();
  ctx.reserve_scratch(16);  // smaller: keeps what it has
  CHECK(ctx.scratch_bytes() == layout.bytes());
  CHECK(ctx.scratch(layout.bytes()) == base);
  ctx.reserve_scratch(std::size_t{1} << 20);  // larger: grows
  CHECK(ctx.scratch_bytes() == (std::size_t{1} << 20));
  CHECK(ctx.scratch(std::size_t{1} << 20) != nullptr);
  CHECK_THROWS_AS(ctx.scratch((std::size_t{1} << 20) + 1), course::UsageError);
}

TEST_CASE("common: Context's occupancy shapes hold a warp at least, and are cached", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const void* kernel = course::test::probe_kernel_address();
  for (std::size_t shared_per_thread : {std::size_t{0}, sizeof(float), 4 * sizeof(float)}) {
    const course::LaunchShape s = ctx.occupancy(kernel, shared_per_thread);
    INFO("shared bytes per thread " << shared_per_thread << ": block " << s.block << ", " << s.blocks_per_sm << " per SM");
    CHECK(s.block >= 32);
    CHECK((s.block & (s.block - 1)) == 0);  // a power of two
    CHECK(s.block <= ctx.facts().max_threads_per_block);
    CHECK(s.blocks_per_sm >= 1);
    CHECK(ctx.resident_blocks(s) == s.blocks_per_sm * ctx.facts().sm_count);
    const course::LaunchShape again = ctx.occupancy(kernel, shared_per_thread);
    CHECK(again.block == s.block);
    CHECK(again.blocks_per_sm == s.blocks_per_sm);
  }
}

TEST_CASE("common: Context refuses a device that does not exist, naming the ones that do", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  CHECK_THROWS_AS(course::Context(99), course::UsageError);
  CHECK_THROWS_AS(course::Context(-1), course::UsageError);
  try {
    course::Context ctx(99);
    FAIL("Context(99) did not throw");
  } catch (const course::UsageError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK_THAT(what, course::test::contains("--device 99"));
    CHECK_THAT(what, course::test::contains("CUDA device"));
    CHECK_THAT(what, course::test::contains("ids 0.."));
  }
  CHECK(course::device_count() >= 1);
}

TEST_CASE("common: a moved-from Context holds nothing", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context a;
  const cudaStream_t stream = a.stream();
  a.reserve_scratch(1024);
  course::Context b(std::move(a));
  CHECK(b.stream() == stream);
  CHECK(b.device() == 0);
  CHECK(b.scratch_bytes() == 1024);
  CHECK(a.stream() == nullptr);  // NOLINT(bugprone-use-after-move): the point of the test
  CHECK(a.device() == -1);
  CHECK(a.scratch_bytes() == 0);
  course::Context c;
  c = std::move(b);  // c's own stream is released, b's taken over
  CHECK(c.stream() == stream);
  CHECK(b.stream() == nullptr);  // NOLINT(bugprone-use-after-move)
  c.synchronize();
}

TEST_CASE("common: parse_size answers a power of 0 or 1 at once, whatever the exponent", "[common]") {
  // The power loop multiplied `exponent` times: 1^99999999999999999 never finished.
  CHECK(course::parse_size("1^99999999999999999") == 1u);
  CHECK(course::parse_size("0^99999999999999999") == 0u);
  CHECK(course::parse_size("0^0") == 1u);
  CHECK(course::parse_size("2^0") == 1u);
  CHECK_THROWS_AS(course::parse_size("2^99999999999999999"), course::UsageError);
  CHECK_THROWS_AS(course::parse_size("3^41"), course::UsageError);
}

TEST_CASE("common: random_vector fills with at least one thread even when the core count is unknown", "[common]") {
  // std::thread::hardware_concurrency() may return 0; zero threads left large vectors all zero.
  CHECK(course::fill_threads(std::size_t{1} << 23, 0) == 1u);
  CHECK(course::fill_threads(std::size_t{1} << 23, 64) == 8u);
  CHECK(course::fill_threads(100, 64) == 1u);
  const auto v = course::random_vector((std::size_t{1} << 22) + 1, 3);
  std::size_t zeros = 0;
  for (float f : v) zeros += f == 0.0f;
  INFO(zeros << " of " << v.size() << " values are 0");
  CHECK(zeros < 16);
}

TEST_CASE("common: the grading seed changes every input, and only when it is set", "[common]") {
  // The test process may itself run under tools/grade --seed: compare with and without, explicitly.
  const char* before = std::getenv("COURSE_GRADING_SEED");
  const std::string saved = before ? before : "";
  unsetenv("COURSE_GRADING_SEED");
  CHECK(course::test::seed(42) == 42u);
  const auto public_in = course::test::make_dot_inputs(1000, 42);
  const auto public_sizes = course::test::awkward_sizes(256, 42);
  setenv("COURSE_GRADING_SEED", "7", 1);
  const std::uint64_t s7 = course::test::seed(42);
  CHECK(s7 != 42u);
  CHECK(course::test::seed(43) != s7);
  const auto graded_in = course::test::make_dot_inputs(1000, 42);
  CHECK(graded_in.x != public_in.x);
  CHECK(graded_in.ref.value != public_in.ref.value);
  CHECK(course::test::awkward_sizes(256, 42).back() != public_sizes.back());
  setenv("COURSE_GRADING_SEED", "8", 1);
  CHECK(course::test::seed(42) != s7);
  if (before) setenv("COURSE_GRADING_SEED", saved.c_str(), 1); else unsetenv("COURSE_GRADING_SEED");
}

// ---- element types beyond float (chapter 10) --------------------------------------------------

TEST_CASE("common: typed random values, the typed reference and the bound from the accumulator", "[common]") {
  using course::Dtype;
  CHECK(course::dtype_size(Dtype::bf16) == 2);
  CHECK(course::dtype_size(Dtype::boolean) == 1);
  CHECK(course::unit_roundoff(Dtype::f32) == std::ldexp(1.0, -24));
  CHECK(course::unit_roundoff(Dtype::f64) == std::ldexp(1.0, -53));
  CHECK(course::unit_roundoff(Dtype::i64) == 0.0);
  const std::size_t n = 5000;
  for (Dtype tx : {Dtype::f32, Dtype::f64, Dtype::f16, Dtype::bf16, Dtype::i8, Dtype::boolean}) {
    for (Dtype ty : {Dtype::f32, Dtype::i8, Dtype::boolean}) {
      const auto x = course::random_bytes(tx, n, 3), y = course::random_bytes(ty, n, 4);
      const auto held = course::reference_dot_typed(tx, x.data(), ty, y.data(), n);
      const auto streamed = course::streamed_reference_typed(tx, 3, ty, 4, n);
      INFO(course::dtype_name(tx) << "*" << course::dtype_name(ty));
      CHECK(held.exact == streamed.exact);
      CHECK(held.exact_value == streamed.exact_value);
      CHECK_THAT(held.ref.value, Catch::Matchers::WithinRel(streamed.ref.value, 1e-12));
    }
  }
  // int8: every value occurs, and the exact sum is exact.
  std::vector<unsigned char> x(256), y(256, 0x80);
  for (int i = 0; i < 256; ++i) x[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i);
  const auto r = course::reference_dot_typed(Dtype::i8, x.data(), Dtype::i8, y.data(), 256);
  CHECK(r.exact);
  CHECK(r.exact_value == -128LL * (-128));  // Σ_{v=-128}^{127} v · (−128) = (−128)·(−128)
  CHECK(course::check_dot_typed(static_cast<double>(r.exact_value), r, 0).ok);
  CHECK_FALSE(course::check_dot_typed(static_cast<double>(r.exact_value) + 1, r, 0).ok);
  // The float32 bound is the kit's dot_error_bound, word for word.
  const course::Reference plain{1.0, 1000.0, 1 << 20};
  CHECK(course::dot_error_bound(plain, std::ldexp(1.0, -24)) == course::dot_error_bound(plain));
  CHECK(course::dot_error_bound(plain, std::ldexp(1.0, -53)) < course::dot_error_bound(plain) * 1e-8);
}

TEST_CASE("common: a typed measurement table has a dtype column, the plain one does not", "[common]") {
  course::Measurement m;
  m.version = "course";
  m.n = 8;
  m.bytes = 40;
  m.ms = course::summarize({1.0});
  m.dtype = "float32*bool";
  course::Table typed = course::measurement_table_typed(), plain = course::measurement_table();
  course::add_measurement(typed, m);
  course::add_measurement(plain, m);
  CHECK(typed.columns().back() == "dtype");
  CHECK(std::get<std::string>(typed.rows()[0].back()) == "float32*bool");
  CHECK(plain.columns().size() + 1 == typed.columns().size());
  CHECK(plain.rows()[0].size() == plain.columns().size());
}

TEST_CASE("common: Stream and Event own their handle, move it, and work as the raw handle", "[common][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;  // makes device 0 current
  course::Stream a;
  REQUIRE(a.get() != nullptr);
  unsigned flags = 0;
  CUDA_CHECK(cudaStreamGetFlags(a, &flags));  // converts to cudaStream_t
  CHECK(flags == cudaStreamNonBlocking);
  const cudaStream_t raw = a.get();
  course::Stream b(std::move(a));
  CHECK(b.get() == raw);
  CHECK(a.get() == nullptr);  // NOLINT(bugprone-use-after-move): the point of the test
  course::Stream c(cudaStreamDefault);
  c = std::move(b);  // c's own stream is destroyed, b's taken over
  CHECK(c.get() == raw);
  CHECK(b.get() == nullptr);  // NOLINT(bugprone-use-after-move)

  course::Event start, stop;
  course::Event moved(std::move(stop));
  CHECK(stop.get() == nullptr);  // NOLINT(bugprone-use-after-move)
  course::DeviceBuffer<float> buf(1 << 20);
  start.record(c);
  buf.fill_bytes(0, c);
  moved.record(c);
  moved.synchronize();
  CHECK(cudaEventQuery(moved) == cudaSuccess);
  CHECK(moved.ms_since(start) >= 0.0f);
  c.synchronize();
  // Made and destroyed many times over: each destructor's call is checked by running it, nothing more.
  for (int i = 0; i < 1000; ++i) {
    course::Stream s;
    course::Event e(cudaEventDisableTiming);
    e.record(s);
  }
}

TEST_CASE("common: the host page size is asked of the system", "[common]") {
  const std::size_t page = course::host_page_bytes();
  CHECK(page >= 4096);
  CHECK((page & (page - 1)) == 0);  // a power of two
#if defined(__unix__)
  CHECK(page == static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
#endif
  CHECK(course::host_page_bytes() == page);
}

namespace {
// Runs `app` on `args`, needing a GPU as a chapter does; returns the exit code, stderr in `err`.
int run_app_gpu(course::App& app, std::vector<std::string> args, std::string& err, bool& ran) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream captured;
  std::streambuf* const saved = std::cerr.rdbuf(captured.rdbuf());
  const int rc = app.run(static_cast<int>(argv.size()), argv.data(), [&](const course::Options&) {
    ran = true;
    return 0;
  }, true);
  std::cerr.rdbuf(saved);
  err = captured.str();
  return rc;
}
}  // namespace

TEST_CASE("common: a bad --device is one short line and exit code 2, on any machine", "[common]") {
  for (const std::string bad : {"-1", "abc", "1.5", "99999999999"}) {
    course::App app("test_app", "test", 16);
    std::string err;
    bool ran = false;
    const int rc = run_app_gpu(app, {"test_app", "--device", bad}, err, ran);
    INFO("--device " << bad << " gave exit code " << rc << " and stderr: " << err);
    CHECK(rc == course::kExitUsage);
    CHECK_FALSE(ran);
    CHECK(err.find("--device") != std::string::npos);
    CHECK(err.find("'" + bad + "'") != std::string::npos);
    CHECK(err.size() < 200);  // CLI::NonNegativeNumber printed its [0 - DBL_MAX] range: 421 characters
  }
  CHECK(course::device_problem("0").empty());
  CHECK(course::device_problem("3").empty());
  CHECK_FALSE(course::device_problem("").empty());
  course::Options seen;
  course::App app("test_app", "test", 16);
  CHECK(run_app(app, {"test_app", "--device", "1"}, &seen) == course::kExitOk);
  CHECK(seen.device == 1);
}

TEST_CASE("common: a --csv in a folder at the top of the file system is exit 2, and no folder is made", "[common]") {
  namespace fs = std::filesystem;
  const fs::path top = fs::path("/") / "course_nonexistent_test_folder";
  REQUIRE_FALSE(fs::exists(top));  // else the test cannot tell: remove it
  course::App app("test_app", "test", 16);
  std::string err;
  bool ran = false;
  const int rc = run_app_gpu(app, {"test_app", "--csv", (top / "x.csv").string()}, err, ran);
  INFO("stderr: " << err);
  CHECK(rc == course::kExitUsage);  // before the GPU check: 2 on a machine with or without a GPU
  CHECK_FALSE(ran);
  CHECK_FALSE(fs::exists(top));
  CHECK(err.find("does not exist") != std::string::npos);
  CHECK(err.find(top.string()) != std::string::npos);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("common: csv_path_problem looks and makes nothing, folders are made only when the work starts", "[common]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "course_test_csv_problem";
  fs::remove_all(dir);
  fs::create_directories(dir);
  { std::ofstream(dir / "file") << "a file\n"; }
  CHECK(course::csv_path_problem((dir / "x.csv").string()).empty());
  CHECK(course::csv_path_problem((dir / "new" / "deeper" / "x.csv").string()).empty());
  CHECK_FALSE(fs::exists(dir / "new"));  // looked, made nothing
  CHECK(course::csv_path_problem(dir.string()).find("is a folder") != std::string::npos);
  CHECK(course::csv_path_problem((dir / "file" / "x.csv").string()).find("is a file, not a folder") != std::string::npos);
  CHECK(course::csv_path_problem((dir / "file" / "a" / "x.csv").string()).find("is a file, not a folder") != std::string::npos);
  CHECK_FALSE(course::csv_path_problem("").empty());
  CHECK(course::csv_path_problem("course_test_relative_new/x.csv").empty());  // made in the current folder
  CHECK_FALSE(fs::exists("course_test_relative_new"));
  // The probes that try whether a folder takes a file are gone: only the test's own file is left.
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  CHECK(left == std::vector<std::string>{"file"});
  if (::geteuid() != 0) {  // root writes anywhere
    fs::permissions(dir, fs::perms::owner_write, fs::perm_options::remove);
    CHECK(course::csv_path_problem((dir / "new" / "x.csv").string()).find("cannot write") != std::string::npos);
    fs::permissions(dir, fs::perms::owner_write, fs::perm_options::add);
  }
  // A chapter run: without a GPU it ends with exit code 3 and leaves no folder behind; with one, the
  // folder exists when the work starts.
  const fs::path late = dir / "late" / "x.csv";
  course::App app("test_app", "test", 16);
  std::string err;
  bool ran = false;
  const int rc = run_app_gpu(app, {"test_app", "--csv", late.string()}, err, ran);
  INFO("exit code " << rc << ", stderr: " << err);
  if (rc == course::kExitNoGpu) {
    CHECK_FALSE(fs::exists(dir / "late"));
  } else {
    CHECK(rc == course::kExitOk);
    CHECK(ran);
    CHECK(fs::is_directory(dir / "late"));
  }
  fs::remove_all(dir);
}

TEST_CASE("common: COURSE_NO_GPU_SAID=1 keeps exit code 3 and drops the repeated no-GPU line", "[common]") {
  std::string err_plain, err_said;
  bool ran = false;
  course::App plain("test_app", "test", 16);
  const int rc_plain = run_app_gpu(plain, {"test_app"}, err_plain, ran);
  ::setenv("COURSE_NO_GPU_SAID", "1", 1);
  course::App said("test_app", "test", 16);
  const int rc_said = run_app_gpu(said, {"test_app"}, err_said, ran);
  ::unsetenv("COURSE_NO_GPU_SAID");
  INFO("without: exit " << rc_plain << ", stderr: " << err_plain << "with: exit " << rc_said << ", stderr: " << err_said);
  CHECK(rc_plain == rc_said);
  if (rc_plain == course::kExitNoGpu) {  // no GPU here: the message goes, the exit code stays
    CHECK(err_plain.find("no NVIDIA GPU") != std::string::npos);
    CHECK(err_said.empty());
  } else {
    CHECK(rc_plain == course::kExitOk);
  }
}

TEST_CASE("common: option values are refused in one wording: the option, the value, what it is not", "[common]") {
  CHECK(course::not_a("x", "a size") == "'x' is not a size");
  CHECK(course::whole_number_problem("5", 1, 10).empty());
  CHECK(course::whole_number_problem("1", 1, 10).empty());
  CHECK(course::whole_number_problem("10", 1, 10).empty());
  CHECK(course::whole_number_problem("-3", -5, 10).empty());
  for (const std::string bad : {"0", "11", "x", "", "1.5", "1e1", " 5", "+5", "5 ", "-", "99999999999999999999"})
    CHECK(course::whole_number_problem(bad, 1, 10) == "'" + bad + "' is not a whole number from 1 to 10");
  CHECK(course::size_problem("2^20").empty());
  CHECK(course::size_problem("0", 0).empty());  // a size option whose 0 means "none"
  CHECK(course::size_problem("0") == "'0' is not a size of at least 1");
  CHECK(course::size_problem("512", 1024) == "'512' is not a size of at least 2^10");
  CHECK(course::size_problem("abc").rfind("'abc' is not a size", 0) == 0);
  CHECK(course::size_problem("2^70") == "'2^70' is not a size below 2^64");
  CHECK(course::size_problem("1-2") == "'1-2' is not a size (it is negative)");
  try {
    course::parse_sizes("2^20,0", "--sizes");
    FAIL("parse_sizes accepted a size of 0");
  } catch (const course::UsageError& e) {
    CHECK(std::string(e.what()) == "--sizes: '0' is not a size of at least 1");  // as --n 0 reads
  }
}

TEST_CASE("common: arguments CLI11 cannot place are named in their order, the first one first", "[common]") {
  CHECK(course::extras_problem({}).empty());
  CHECK(course::extras_problem({"--streams", "0"}) == "unknown option '--streams'");  // CLI11 2.1: "0 --streams"
  CHECK(course::extras_problem({"--streams=4"}) == "unknown option '--streams'");
  CHECK(course::extras_problem({"0", "--streams"}).rfind("'0' follows no option that takes a value", 0) == 0);
  CHECK(course::extras_problem({"-5"}).rfind("'-5' follows no option", 0) == 0);  // a number, not an option
}

namespace {
// Runs an App that needs a GPU on `args` (its versions: "first", "second"; `check` added with
// add_check when given): the exit code, stderr, and whether the body ran.
struct Refusal {
  int rc = -1;
  std::string err;
  bool ran = false;
};
Refusal run_refused(std::vector<std::string> args, std::function<void(const course::Options&)> check = nullptr) {
  course::App app("test_app", "test", 16);
  app.set_versions({{"first", "the first"}, {"second", "the second"}});
  if (check) app.add_check(std::move(check));
  args.insert(args.begin(), "test_app");
  Refusal r;
  r.rc = run_app_gpu(app, args, r.err, r.ran);
  return r;
}
}  // namespace

TEST_CASE("common: every bad option is exit 2 before the GPU check, the option named first", "[common]") {
  // {arguments, the start of the message}: on a machine with or without a GPU (the GPU check comes
  // after every one of these), exit code 2, nothing run, one line of error and the --help hint.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--n", "0"}, "--n: '0' is not a size of at least 1"},
      {{"--n", "lots"}, "--n: 'lots' is not a size"},
      {{"--reps", "0"}, "--reps: '0' is not a whole number from 1 to 100000"},
      {{"--reps", "many"}, "--reps: 'many' is not a whole number from 1 to 100000"},
      {{"--warmup", "-1"}, "--warmup: '-1' is not a whole number from 0 to 10000"},
      {{"--seed", "-1"}, "--seed: '-1' is not a seed"},
      {{"--device", "x"}, "--device: 'x' is not a device number"},
      {{"--kernel", "third"}, "--kernel: 'third' is not a version of this chapter"},
      {{"--streams", "0"}, "unknown option '--streams'"},
      {{"--quiet", "0"}, "'0' follows no option that takes a value"},
      {{"--reps", "3", "--reps", "4"}, "--reps: given 2 times; give it once"},
      {{"--csv", "--quiet"}, "--csv: give it a value"},  // CLI11 2.1 would take --quiet as the file name
      {{"--reps"}, "--reps: give it a value"},
  };
  for (const auto& [args, words] : cases) {
    const Refusal r = run_refused(args);
    std::string line;
    for (const auto& a : args) line += " " + a;
    INFO("test_app" << line << ": exit code " << r.rc << ", stderr: " << r.err);
    CHECK(r.rc == course::kExitUsage);
    CHECK_FALSE(r.ran);
    CHECK(r.err.rfind("test_app: error: " + words, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 2);
  }
}

TEST_CASE("common: a --csv no file can be made in is exit 2 before the GPU check, /proc too", "[common]") {
  // access() tells root that /proc is writable; a file cannot be made there all the same. It was
  // exit 3 (no GPU) on a machine without one, the GPU check coming first (issue 36.5).
  if (!std::filesystem::is_directory("/proc")) return;
  CHECK_FALSE(course::csv_path_problem("/proc/x.csv").empty());
  const Refusal r = run_refused({"--csv", "/proc/course_test.csv"});
  INFO("exit code " << r.rc << ", stderr: " << r.err);
  CHECK(r.rc == course::kExitUsage);
  CHECK_FALSE(r.ran);
  CHECK(r.err.find("--csv: '/proc/course_test.csv'") != std::string::npos);
}

TEST_CASE("common: add_check runs after parsing and before --list and the GPU check", "[common]") {
  std::size_t seen_n = 0;
  const Refusal r = run_refused({"--n", "2^10", "--list"}, [&](const course::Options& opt) {
    seen_n = opt.n;
    throw course::UsageError("--n: the check refused it");
  });
  INFO("stderr: " << r.err);
  CHECK(seen_n == 1024u);  // the parsed options
  CHECK(r.rc == course::kExitUsage);
  CHECK_FALSE(r.ran);
  CHECK(r.err.find("--n: the check refused it") != std::string::npos);
  bool checked = false;
  const Refusal fine = run_refused({"--list"}, [&](const course::Options&) { checked = true; });
  CHECK(checked);
  CHECK(fine.rc == course::kExitOk);  // --list needs no GPU
}

TEST_CASE("common: the stopping rule ends a host measurement once its mean is known or its time spent", "[common]") {
  const course::StoppingRule off{};
  REQUIRE_FALSE(off.enough({1.0, 1.0, 1.0, 1.0}));  // off: every rep
  const course::StoppingRule noise{3, 0.005, 0};
  REQUIRE_FALSE(noise.enough({1.0, 1.0}));                 // fewer than min_samples
  REQUIRE(noise.enough({1.0, 1.0, 1.0}));                  // no spread at all
  REQUIRE_FALSE(noise.enough({1.0, 2.0, 1.0, 2.0}));       // too noisy to stop
  const course::StoppingRule time{3, 0, 1.0};
  REQUIRE_FALSE(time.enough({100.0, 900.0}));              // a second spent, but two samples
  REQUIRE(time.enough({100.0, 800.0, 200.0}));             // 1.1 s
  REQUIRE_FALSE(time.enough({100.0, 200.0, 300.0}));       // 0.6 s
  REQUIRE_FALSE(time.enough({4000.0}));                    // one sample: no spread yet
  REQUIRE(time.enough({1600.0, 1600.0}));                  // 3.2 s: three budgets spent, two samples
}

namespace {
// A clock for time_cpu_ms that moves only when the timed work moves it: the stopping rule is tested
// on exact times, never on how long a sleep took on a busy host.
struct FakeClock {
  double ms = 0;
  double now_ms() const { return ms; }
};
}  // namespace

TEST_CASE("common: time_cpu_ms stops where the stopping rule says, on a fake clock", "[common]") {
  FakeClock clock;
  int runs = 0;
  double step_ms = 1.0;
  auto work = [&] { ++runs; clock.ms += step_ms; };
  // 1 ms of work against a 2 ms budget: two samples (2 ms) are under the timeout (3 x 2 ms) and
  // min_samples is 3, so it stops at the third sample (3 ms spent).
  auto samples = course::time_cpu_ms(work, 0, 50, course::StoppingRule{3, 0, 0.002}, clock);
  CHECK(samples == std::vector<double>{1.0, 1.0, 1.0});
  CHECK(runs == 3);
  // The timeout: 2.5 ms a sample against a 2 ms budget stops once 6 ms are spent (the third
  // sample), although min_samples asks for 5.
  runs = 0;
  step_ms = 2.5;
  samples = course::time_cpu_ms(work, 0, 50, course::StoppingRule{5, 0, 0.002}, clock);
  CHECK(samples.size() == 3u);
  CHECK(runs == 3);
  // Short work runs until the budget is spent: 0.125 ms a sample (exact in binary) against 1.9 ms
  // stops at the 16th sample (2 ms; 15 make 1.875 ms).
  step_ms = 0.125;
  samples = course::time_cpu_ms(work, 0, 50, course::StoppingRule{3, 0, 0.0019}, clock);
  CHECK(samples.size() == 16u);
  // Warm-up stops once a quarter of the budget is spent: 1 ms runs, a 2 ms budget, 10 warm-ups
  // asked: the first takes 1 ms >= 0.5 ms, so only one warm-up runs, then three samples.
  runs = 0;
  step_ms = 1.0;
  samples = course::time_cpu_ms(work, 10, 50, course::StoppingRule{3, 0, 0.002}, clock);
  CHECK(samples.size() == 3u);
  CHECK(runs == 1 + 3);
  // With the rule off every warm-up and every rep is taken, however long each takes.
  runs = 0;
  step_ms = 1e6;
  samples = course::time_cpu_ms(work, 2, 7, course::StoppingRule{}, clock);
  CHECK(samples.size() == 7u);
  CHECK(runs == 2 + 7);
  // The steady clock is the default, and with the rule off its times cannot change the count.
  runs = 0;
  const auto all = course::time_cpu_ms([&] { ++runs; }, 1, 7, course::StoppingRule{});
  CHECK(all.size() == 7u);
  CHECK(runs == 8);
  for (double ms : all) CHECK(ms >= 0);
}

// The check of every timed call (issue 38, class 4), no GPU and no clock: a benchmark whose call
// returns an earlier call's answer (cached) is wrong on the next call after x changed, and the
// failure names that call; a benchmark whose every call is right passes with its worst error.
TEST_CASE("common: check_timed_calls finds a call that returns an earlier call's answer", "[common]") {
  course::Reference base;
  base.value = 100.0;
  base.sum_abs = 1000.0;
  course::TimedInputChange change;
  change.active = true;
  change.base = base;
  change.changed = base;
  change.changed.value = 100.0 + 64.0 * course::dot_error_bound(base) + 1.0;
  CHECK(!course::changed_at(change, 0));
  CHECK(course::changed_at(change, 1));
  CHECK(!course::changed_at(course::TimedInputChange{}, 1));  // nothing to change: every call reads x as made
  const std::size_t warmup = 2, reps = 5;
  auto check = [&](std::size_t i, double got) { return course::check_dot(got, change.ref(course::changed_at(change, i))); };
  auto changed = [&](std::size_t i) { return course::changed_at(change, i); };
  std::vector<double> right;
  for (std::size_t i = 0; i < warmup + reps; ++i) right.push_back(change.ref(course::changed_at(change, i)).value);
  right[4] += 0.5 * course::dot_error_bound(base);  // within the bound
  const course::Verdict ok = course::check_timed_calls(right, warmup, check, changed);
  CHECK(ok.ok);
  CHECK_THAT(ok.rel_error, WithinRel(0.5 * course::dot_error_bound(base) / 100.0, 1e-9));

  std::vector<double> cached = right;
  cached[5] = cached[4];  // timed call 4 (x changed) returns timed call 3's answer
  const course::Verdict bad = course::check_timed_calls(cached, warmup, check, changed);
  CHECK(!bad.ok);
  INFO(bad.message);
  CHECK(bad.message.find("timed call 4 of 5 (x changed)") == 0);

  std::vector<double> never = right;
  never[1] = std::nan("");  // a warm-up call that never wrote its slot
  const course::Verdict nan = course::check_timed_calls(never, warmup, check, changed);
  CHECK(!nan.ok);
  CHECK(nan.message.find("warm-up call 2 of 2 (x changed)") == 0);
  CHECK(course::check_timed_calls({}, 0, check).ok);  // no call, nothing wrong
}
