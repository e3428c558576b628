// Catch2 2.x is header-only and needs one translation unit that defines main(); Catch2 3 brings
// its own (Catch2::Catch2WithMain). See cmake/Course.cmake.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// Catch2 3 compiles the listener from progress_listener.cpp into every test program
// (tests/CMakeLists.txt); Catch2 2 from here, where its whole runner is compiled.
#include "progress_listener.hpp"
