#pragma once
/// \file
/// \brief libdotcourse's seam with chapter 07: the one place the library includes the chapter.
///
/// The library's own sources (this folder: the C ABI, host_auto, typed) have no holes; the engine
/// they call is chapter 07's, with the exercises in it. It is compiled from one tree: the course
/// build's (chapters/ or solutions/, as COURSE_TREE says) or, for the wheel and the library built
/// alone (library/packaging), solutions/07_library. This header names the chapter's header by its
/// path in that tree; the library's build gives the tree's root as an include folder, to the library
/// alone. What the library calls through it (dot.hpp documents each):
///   ch07::Engine          a context's GPU state: Engine(device, n_max), gpu(), lock, n_max(),
///                         register_host, unregister_host, is_registered, h_result(), typed_state()
///   ch07::Handles<T>      the C ABI's table of live handles
///   ch07::TooLargeError, ch07::require_fits   a call with n > n_max
///   ch07::dot_host, ch07::dot_device          the float dot of host and of device arrays
/// The holes behind it: plan_scratch (exercise 1a, in Engine's constructor), Handles::retire (1b,
/// dotcourse_destroy), reuse_steps (2, in dot_host), over_n_max and n_max_for (3, in require_fits),
/// covers (4, in is_registered).

#include "07_library/dot.hpp"
