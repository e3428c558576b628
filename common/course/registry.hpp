#pragma once
/// \file registry.hpp
/// \brief One registry per chapter: the single list of its versions.
///
/// The command line (--kernel, --list), the tests, the benchmark sweep and the docs all iterate a
/// chapter's registry, so no list of kernels is ever written twice.

#include <string>
#include <string_view>
#include <vector>

namespace course {

/// One version of a chapter's computation: a name for the command line, one line for tables and
/// --list, the host function that runs it, and whether the student writes it.
template <class Fn>
struct Version {
  std::string_view name;         ///< short, unique, used on the command line: "v3_sequential"
  std::string_view description;  ///< one line: what changed from the previous version
  Fn run;                        ///< the launcher (host code)
  bool exercise = false;         ///< the student fills holes in it; graded tests cover it
};

/// The entry called `name`, or nullptr.
template <class Fn>
const Version<Fn>* find_version(const std::vector<Version<Fn>>& registry, std::string_view name) {
  for (const auto& v : registry)
    if (v.name == name) return &v;
  return nullptr;
}

/// The names in registry order.
template <class Fn>
std::vector<std::string> version_names(const std::vector<Version<Fn>>& registry) {
  std::vector<std::string> names;
  for (const auto& v : registry) names.emplace_back(v.name);
  return names;
}

}  // namespace course
