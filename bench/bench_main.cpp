// The one main() of steadyocr_bench: every bench/*.cpp registers its benchmarks into this executable.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
