// course_info: the GPU this course will run on, its facts and its measured roofline.
// Exit code 3 (and one line saying why) when there is no usable GPU: tools/run_course.sh uses it.

#include <cstdio>

#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/device.hpp"

int main(int argc, char** argv) {
  course::App app("course_info", "Prints the GPU's facts and its measured bandwidth roofline.", 0);
  bool probe = false;
  app.cli().add_flag("--probe", probe, "Only check that a GPU is usable (no measurement)");
  return app.run(argc, argv, [&](const course::Options& opt) {
    course::Context ctx(opt.device);
    const auto& f = ctx.facts();
    std::printf("GPU: %s\n", course::describe_device(f).c_str());
    if (probe) return course::kExitOk;
    const auto& r = ctx.roofline();
    std::printf("read roofline: %.0f GB/s (%.1f%% of peak), device-to-device copy: %.0f GB/s (read + write), "
                "measured on %s\n",
                r.read_gbps, 100 * r.read_gbps / f.peak_gbps, r.copy_gbps, course::format_bytes(r.bytes).c_str());
    return course::kExitOk;
  });
}
