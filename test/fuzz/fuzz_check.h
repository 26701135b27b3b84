#pragma once

#include <cstdio>
#include <cstdlib>

// A property every input must keep; a violation is a crash libFuzzer records with its input.
#define FUZZ_CHECK(cond, what)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "property violated: %s (%s:%d)\n", what, __FILE__, __LINE__);           \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
