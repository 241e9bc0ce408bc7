// Where one image's time went inside each model stage: host work around the calls, waits, planning, and the
// device's copies and kernels as the backend measured them. Carried in OcrResult, summed by `bench` into the time
// table (docs/BENCHMARKS.md).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/model.h"

namespace steadyocr::pipeline {

// Milliseconds, summed over the image's calls of one model. A call shared with other images (batching across
// callers) counts whole for each: this is the time the image lived through, not its share of the device.
struct ModelTimes {
  int calls = 0;
  double prep = 0;      // host: building the inputs (resize, normalise, stacking)
  double wait = 0;      // waiting: for callers to stack with, a call slot, a free plan instance
  double plan = 0;      // finding the input shape's plan, and planning it when new
  double acquire = 0;   // waiting for a stream and an activation arena
  double staging = 0;   // host: copying inputs into page-locked memory
  double upload = 0;    // device: host-to-device copies
  double compute = 0;   // device: kernels
  double download = 0;  // device: device-to-host copies
  double sync = 0;      // host: blocked until the device finished (>= the device's time when streams overlap)
  double run = 0;       // the backend's run, wall clock (on a host backend all of it is compute)
  double finish = 0;    // host: reading the outputs (CTC decoding, class choice)

  void add_call(const runtime::CallProfile& p) {
    ++calls;
    wait += p.wait_ms;
    plan += p.plan_ms;
    run += p.run_ms;
    acquire += p.backend.acquire_ms;
    staging += p.backend.staging_ms;
    upload += p.backend.upload_ms;
    compute += p.backend.compute_ms;
    download += p.backend.download_ms;
    sync += p.backend.sync_ms;
  }
};

struct TimeProfile {
  ModelTimes det, cls, rec;
};

// JSON codecs (the worker's results carry the profile to the engine); missing fields read as 0.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelTimes, calls, prep, wait, plan, acquire, staging, upload, compute,
                                                download, sync, run, finish)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimeProfile, det, cls, rec)

}  // namespace steadyocr::pipeline
