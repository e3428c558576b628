#include "course/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace course {

Progress::Progress(int total, std::string label, bool enabled)
    : total_(total), label_(std::move(label)), enabled_(enabled), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { done(); }

void Progress::step(const std::string& what) {
  if (!enabled_) return;
  ++current_;
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_).count();
  const int width = static_cast<int>(std::to_string(total_).size());
  std::fprintf(stderr, "%s[%*d/%d] %02lld:%02lld  %s: %s%s", tty_ ? "\r\033[K" : "", width, current_, total_,
               static_cast<long long>(secs / 60), static_cast<long long>(secs % 60), label_.c_str(), what.c_str(),
               tty_ ? "" : "\n");
  std::fflush(stderr);
  open_ = tty_;
}

void Progress::done() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace course
