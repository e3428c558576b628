/* A program outside the course that uses the installed libdotcourse: the C consumer (built with
 * `pkg-config --cflags --libs dotcourse`), and the C++ consumer (consumer.cpp, built with
 * find_package(dotcourse)) includes it. It checks the version it was promised, computes on a CPU-only
 * context (dotcourse_create_cpu: a float dot and an int8 dot, everywhere) and, where there is a GPU,
 * one dot product on it; without a GPU, dotcourse_create must say so (DOTCOURSE_ERROR_NO_GPU).
 *   consumer EXPECTED_VERSION */
#include <stdio.h>
#include <string.h>

#include <dotcourse/dotcourse.h>

int run_consumer(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s EXPECTED_VERSION\n", argv[0]);
    return 2;
  }
  const char* version = dotcourse_version();
  if (strcmp(version, argv[1]) != 0) {
    fprintf(stderr, "consumer: dotcourse_version() is \"%s\", the package promised \"%s\"\n", version, argv[1]);
    return 1;
  }
  dotcourse_context* cpu = NULL;
  dotcourse_status status = dotcourse_create_cpu(2, &cpu);
  float a[1000], b[1000], cpu_dot = 0.0f;
  signed char i8[1000];
  double exact = 0.0;
  for (int i = 0; i < 1000; ++i) a[i] = 0.5f, b[i] = 3.0f, i8[i] = (signed char)(i % 2 ? 127 : -128);
  if (status == DOTCOURSE_OK) status = dotcourse_dot(cpu, a, b, 1000, &cpu_dot);
  if (status == DOTCOURSE_OK)
    status = dotcourse_dot_typed_host(cpu, i8, DOTCOURSE_INT8, i8, DOTCOURSE_INT8, 1000, &exact);
  dotcourse_destroy(cpu);
  if (status != DOTCOURSE_OK || cpu_dot != 1500.0f || exact != 500.0 * (127.0 * 127.0 + 128.0 * 128.0)) {
    fprintf(stderr, "consumer: the CPU context gave %g and %.17g (status %d: %s), expected 1500 and %.17g\n",
            cpu_dot, exact, (int)status, dotcourse_last_error(), 500.0 * (127.0 * 127.0 + 128.0 * 128.0));
    return 1;
  }
  printf("consumer: libdotcourse %s on the CPU: dot = %g, int8 dot = %.0f\n", version, cpu_dot, exact);

  dotcourse_context* ctx = NULL;
  status = dotcourse_create(0, 1000, &ctx);
  if (status == DOTCOURSE_ERROR_NO_GPU) {
    printf("consumer: libdotcourse %s linked and loaded; no GPU here (%s)\n", version, dotcourse_last_error());
    return 0;
  }
  if (status != DOTCOURSE_OK) {
    fprintf(stderr, "consumer: dotcourse_create: %s\n", dotcourse_last_error());
    return 1;
  }
  float x[1000], y[1000], r = 0.0f;
  for (int i = 0; i < 1000; ++i) x[i] = 1.0f, y[i] = 2.0f;
  status = dotcourse_dot(ctx, x, y, 1000, &r);
  dotcourse_destroy(ctx);
  if (status != DOTCOURSE_OK || r != 2000.0f) {
    fprintf(stderr, "consumer: dot gave %g (status %d: %s), expected 2000\n", r, (int)status, dotcourse_last_error());
    return 1;
  }
  printf("consumer: libdotcourse %s: dot = %g on the GPU\n", version, r);
  return 0;
}

#ifndef CONSUMER_NO_MAIN
int main(int argc, char** argv) { return run_consumer(argc, argv); }
#endif
