// --cuda-plugin PATH, for every command that loads the CUDA plugin (ocr, bench, serve, doctor).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

namespace steadyocr::cli {

// Pins the CUDA plugin (runtime/cuda_plugin.h) for this process and every GPU worker it starts: the environment
// carries the pin to both.
inline void add_cuda_plugin_flag(CLI::App* app) {
  app->add_option_function<std::string>(
         "--cuda-plugin", [](const std::string& path) { ::setenv("STEADYOCR_CUDA_PLUGIN", path.c_str(), 1); },
         "Load this CUDA plugin file (e.g. lib/steadyocr/libsteadyocr_cuda11.so) instead of the newest one the driver "
         "runs; a folder is searched first instead. Same as STEADYOCR_CUDA_PLUGIN")
      ->check(CLI::ExistingPath);
}

}  // namespace steadyocr::cli
