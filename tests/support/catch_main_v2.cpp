// Catch2 2.x is header-only and needs one translation unit that defines main(); Catch2 3 brings
// its own (Catch2::Catch2WithMain). See cmake/Course.cmake.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
