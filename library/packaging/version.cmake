# The one version of libdotcourse. Everything else reads it from here: the CMake projects
# (packaging/CMakeLists.txt's project(VERSION), the course build's library.cmake), and from them the
# C library (dotcourse_version()), the CMake package (dotcourseConfigVersion.cmake), dotcourse.pc,
# the Python package (pyproject.toml reads this line; dotcourse.__version__) and the Go tests.
set(DOTCOURSE_VERSION 0.8.0)
