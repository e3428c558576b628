#pragma once
// A Catch2 listener that writes "start NAME" and "end NAME" lines, flushed at once, to the file that
// COURSE_TEST_PROGRESS names (nothing when it is unset). The grader runs a chapter's cases in one
// process and watches that file: a case still open past its own time limit is ended then, not at
// the end of the whole batch's limit (tools/coursetools/catchrun.py). Catch2's XML reporter cannot
// tell this: it buffers its output. Included once per test program: by catch_main_v2.cpp (Catch2 2)
// and by progress_listener.cpp (Catch2 3).

#include <cstdio>
#include <cstdlib>
#include <string>

namespace course::test {

inline void note_progress(const char* what, const std::string& name) {
  const char* path = std::getenv("COURSE_TEST_PROGRESS");
  if (path == nullptr || *path == '\0') return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s %s\n", what, name.c_str());
    std::fclose(f);  // flushed before the case runs: a hang or a crash cannot lose the line
  }
}

#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR >= 3
class ProgressListener : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override { note_progress("start", info.name); }
  void testCaseEnded(Catch::TestCaseStats const& stats) override { note_progress("end", stats.testInfo->name); }
};
#else
struct ProgressListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override { note_progress("start", info.name); }
  void testCaseEnded(Catch::TestCaseStats const& stats) override { note_progress("end", stats.testInfo.name); }
};
#endif

CATCH_REGISTER_LISTENER(ProgressListener)

}  // namespace course::test
