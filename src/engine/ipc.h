// Framed messages over pipes between a supervisor and its worker processes.
// Frame: u32 header length, header bytes (JSON text), u64 payload length, payload bytes (little-endian).
#pragma once

#include <string>

#include "core/status.h"

namespace steadyocr::engine {

struct Message {
  std::string header;   // JSON text: {"id": 7, "kind": "ocr", ...}
  std::string payload;  // raw bytes (an encoded image, a result)
};

// Largest frame accepted; a peer announcing more is treated as corrupt.
constexpr size_t kMaxFrameBytes = size_t{1} << 30;

Status write_message(int fd, const Message& m);
// Blocks up to timeout_ms (<0: forever). kDeadlineExceeded on timeout, kUnavailable on EOF (peer gone),
// kDataLoss on a malformed frame.
Result<Message> read_message(int fd, int timeout_ms = -1);

}  // namespace steadyocr::engine
