#pragma once
/// \file progress.hpp
/// \brief A progress line on stderr for long sweeps.

#include <chrono>
#include <string>

namespace course {

/// Prints "[ 12/120] 00:14  v3 n=2^24" to stderr: rewritten in place on a terminal, one line per
/// step otherwise (logs, CI). Silent when `enabled` is false.
class Progress {
 public:
  Progress(int total, std::string label, bool enabled = true);
  ~Progress();
  /// Announces the step that starts now.
  void step(const std::string& what);
  /// Ends the line (also done by the destructor).
  void done();

 private:
  int total_;
  int current_ = 0;
  std::string label_;
  bool enabled_;
  bool tty_;
  bool open_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace course
