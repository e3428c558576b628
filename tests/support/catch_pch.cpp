// Nothing of its own: the target course_catch_pch (cmake/Course.cmake) compiles this file only to
// build Catch2 2's precompiled header, which every test program then reuses.
