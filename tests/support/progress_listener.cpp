// Catch2 3: the progress listener (progress_listener.hpp), compiled into every test program.
#include <catch2/catch_test_case_info.hpp>
#include <catch2/catch_version_macros.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include "progress_listener.hpp"
