// The C++ consumer: the same checks as consumer.c, compiled as C++ against the installed CMake
// package (find_package(dotcourse) -> dotcourse::dotcourse). dotcourse.h must work from both.
#define CONSUMER_NO_MAIN
#include "consumer.c"

int main(int argc, char** argv) { return run_consumer(argc, argv); }
