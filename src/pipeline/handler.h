// The one way an encoded image becomes a result: decode (limits checked from the header first) → Pipeline::run →
// result, with the optional visualisation drawn from the same decoded picture. The engine's in-process rungs and
// its worker processes both call this, so every image takes one path and is decoded once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "pipeline/visualize.h"

namespace steadyocr::pipeline {

struct ImageRequest {
  const uint8_t* data = nullptr;  // the encoded file (not owned)
  size_t size = 0;
  // Also draw the visualisation and encode it in this format (".jpg", ".png", ...; "" = none).
  std::string vis_format;
  ImageOptions options;  // this image's changes to the pipeline's options
};

struct ImageReply {
  Result<OcrResult> result = Status(StatusCode::kInternal, "not read");
  std::vector<uint8_t> vis;  // the encoded visualisation, when asked for and the image was read
  Status vis_status;         // why the visualisation could not be made (the result stands)
};

// Reads `requests` with `pipeline`: decodes them in parallel, then runs the pipeline on the pictures together
// (host stages across pictures; see Pipeline::run_many). Replies follow the request order. `vis` draws the
// visualisations asked for (null: none can be drawn, which the replies say). Timings include decode.
std::vector<ImageReply> read_images(const Pipeline& pipeline, const std::vector<ImageRequest>& requests,
                                    const DecodeLimits& limits, const Visualizer* vis = nullptr);

// Threads of OpenCV's own parallel loops (resize, warps, colour conversion; TBB in Debian's build, a pool of its own
// beside OpenMP's). 1: none, for a process that already reads one image per thread, where each image's resize
// handed to a pool of every core put twice as many threads as cores on the host. OPENCV_FOR_THREADS_NUM, when the
// user set it, is left to OpenCV. Returns the count in force.
int set_image_threads(int threads);

}  // namespace steadyocr::pipeline
