// Chapter 04 grading tests: every version of the registry at awkward sizes, on random signed data
// with spikes, against the fp64 reference within the error bound.
//
// The racy version is held only to what it cannot get wrong — a size where a single thread does
// all the work — so no test depends on winning or losing the race. Its test is tagged [race], so
// a compute-sanitizer run can leave it out with the test spec "~[race]".

#include <cmath>
#include <set>
#include <string>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using Version = course::Version<ch04::GpuDot>;

// Runs `v` once on the inputs, on the context's stream, with the result poisoned to NaN first;
// returns what it wrote.
float run_once(const Version& v, const course::test::DotInputs& in, course::Context& ctx) {
  cudaStream_t stream = ctx.stream();
  // Guard zones: NaN read past the end of x or y poisons the sum; a write past the result shows.
  course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
  d_result.fill_bytes(0xFF, stream);  // NaN: a result that is never written cannot pass
  ch04::Workspace ws(ctx);
  v.run.launch(d_x.data(), d_y.data(), in.x.size(), d_result.data(), ws, stream);
  ctx.synchronize();
  const std::string damage = d_result.guard_damage();
  INFO(std::string(v.name) << " at n = " << in.x.size() << ": " << damage);
  CHECK(damage.empty());
  return d_result.download()[0];
}

// What a student should look at, from what the result looks like.
std::string hint(const Version& v, const course::Verdict& verdict) {
  if (std::isnan(verdict.got))
    return "NaN: the result was never written, or a NaN was read. Did the launcher run? Did a thread read "
           "past n?";
  if (verdict.got == 0.0 && verdict.expected != 0.0)
    return "0 is what the launcher's cudaMemsetAsync left: no product reached the result. Is the TODO in " +
           std::string(v.name) + " still empty?";
  if (v.name == "atomic_each")
    return "every product must reach *result through atomicAdd(result, x[i] * y[i]); a plain += loses the "
           "updates of other threads.";
  if (v.name == "atomic_once")
    return "each thread sums i = threadIdx.x, threadIdx.x + blockDim.x, ... (while i < n) in a float "
           "register that starts at 0, then calls atomicAdd(result, sum) once, after the loop.";
  return "compare with atomic_once: a strided loop over the whole vector, and one atomicAdd per thread.";
}

void check_at_awkward_sizes(const Version& v) {
  course::Context ctx;
  const int block = ch04::one_block_threads(ctx);
  for (std::size_t n : course::test::awkward_sizes(static_cast<std::size_t>(block), 4)) {
    const auto in = course::test::make_dot_inputs(n, 400 + n);
    const float got = run_once(v, in, ctx);
    const course::Verdict verdict = course::check_dot(got, in.ref);
    INFO(course::test::explain(verdict, n, std::string(v.name) + " (one block of " + std::to_string(block) + ")",
                               hint(v, verdict)));
    CHECK(verdict.ok);
  }
}

const bool registered = [] {
  for (const auto& v : ch04::versions()) {
    const std::string name(v.name);
    if (v.run.racy) {
      course::test::add_case("ch04 " + name + ": exact when a single thread does all the work (n = 0, 1)",
                             "[ch04][gpu][race]", [&v] {
                               COURSE_REQUIRE_GPU();
                               course::Context ctx;
                               // With n <= 1 only thread 0 touches the result: no race to lose.
                               for (std::size_t n : {std::size_t{0}, std::size_t{1}}) {
                                 const auto in = course::test::make_dot_inputs(n, 7);
                                 const course::Verdict verdict = course::check_dot(run_once(v, in, ctx), in.ref);
                                 INFO(course::test::explain(verdict, n, std::string(v.name),
                                                            "with one element only thread 0 adds; it must "
                                                            "load, add and store x[0] * y[0]."));
                                 CHECK(verdict.ok);
                               }
                             });
      continue;
    }
    const std::string tags = std::string("[ch04][gpu]") + (v.exercise ? "[exercise]" : "");
    course::test::add_case("ch04 " + name + ": matches the fp64 reference at awkward sizes", tags, [&v] {
      COURSE_REQUIRE_GPU();
      check_at_awkward_sizes(v);
    });
  }
  return true;
}();

}  // namespace

TEST_CASE("ch04 registry: unique names, one racy version, the exercises marked", "[ch04]") {
  const auto& reg = ch04::versions();
  std::set<std::string> names;
  int racy = 0, exercises = 0;
  for (const auto& v : reg) {
    INFO("version '" << v.name << "'");
    CHECK(!v.name.empty());
    CHECK(!v.description.empty());
    CHECK(v.run.launch != nullptr);
    CHECK(names.insert(std::string(v.name)).second);
    racy += v.run.racy ? 1 : 0;
    exercises += v.exercise ? 1 : 0;
    CHECK_FALSE((v.run.racy && v.exercise));  // a race is shown, never graded
  }
  CHECK(racy == 1);
  CHECK(exercises == 2);
  CHECK(course::find_version(reg, "atomic_once") != nullptr);
}

// A result must follow the input: new values in the same device buffers give the new answer (a
// launcher that caches its result by pointer, or hard-codes the public one, fails).
namespace {
const bool registered_follow = [] {
  for (const auto& v : ch04::versions()) {
    if (!v.exercise) continue;
    course::test::add_case("ch04 " + std::string(v.name) + ": follows its input (new values in the same buffers)",
                           "[ch04][gpu][exercise]", [&v] {
                             COURSE_REQUIRE_GPU();
                             const std::size_t n = 100003;
                             auto in = course::test::make_dot_inputs(n, 640);
                             course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
                             course::Context ctx;
                             ch04::Workspace ws(ctx);
                             for (int round = 0; round < 2; ++round) {
                               d_result.fill_bytes(0xFF, ctx.stream());
                               v.run.launch(d_x.data(), d_y.data(), n, d_result.data(), ws, ctx.stream());
                               ctx.synchronize();
                               const course::Verdict verdict = course::check_dot(d_result.download()[0], in.ref);
                               INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " +
                                                                          std::to_string(round + 1) + " of 2)",
                                                          "the second round has new values in the same buffers: "
                                                          "read x and y on every call, keep nothing between calls"));
                               CHECK(verdict.ok);
                               in = course::test::make_dot_inputs(n, 641);
                               d_x.upload(in.x);
                               d_y.upload(in.y);
                             }
                           });
  }
  return true;
}();
}  // namespace
