#include "engine/ipc.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace steadyocr::engine {
namespace {

Status write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return unavailable(std::string("pipe write failed: ") + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::ok();
}

// Reads exactly n bytes before `deadline` (steady clock; max() = none).
Status read_all(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline, bool* got_any) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    int wait_ms = -1;
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Status(StatusCode::kDeadlineExceeded, "timed out waiting for the peer");
      wait_ms = static_cast<int>(left.count());
    }
    pollfd pfd{fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, wait_ms);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return unavailable(std::string("poll failed: ") + std::strerror(errno));
    }
    if (pr == 0) return Status(StatusCode::kDeadlineExceeded, "timed out waiting for the peer");
    ssize_t r = ::read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return unavailable(std::string("pipe read failed: ") + std::strerror(errno));
    }
    if (r == 0) return unavailable("peer closed the pipe");
    if (got_any) *got_any = true;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::ok();
}

}  // namespace

Status write_message(int fd, const Message& m) {
  if (m.header.size() > kMaxFrameBytes || m.payload.size() > kMaxFrameBytes) {
    return resource_exhausted("message larger than the 1 GiB frame limit");
  }
  uint8_t h[4];
  uint32_t hl = static_cast<uint32_t>(m.header.size());
  for (int i = 0; i < 4; ++i) h[i] = static_cast<uint8_t>(hl >> (8 * i));
  uint8_t pl[8];
  uint64_t plen = m.payload.size();
  for (int i = 0; i < 8; ++i) pl[i] = static_cast<uint8_t>(plen >> (8 * i));
  // One buffer for small frames keeps the frame atomic with respect to signals between writes.
  std::string frame;
  frame.reserve(12 + m.header.size() + m.payload.size());
  frame.append(reinterpret_cast<char*>(h), 4).append(m.header).append(reinterpret_cast<char*>(pl), 8).append(m.payload);
  return write_all(fd, frame.data(), frame.size());
}

Result<Message> read_message(int fd, int timeout_ms) {
  auto deadline = timeout_ms < 0 ? std::chrono::steady_clock::time_point::max()
                                 : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint8_t h[4];
  bool got_any = false;
  RETURN_IF_ERROR(read_all(fd, h, 4, deadline, &got_any));
  // Once a frame started, give the rest of it time to arrive even past the deadline.
  auto rest_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  uint32_t hl = h[0] | (h[1] << 8) | (h[2] << 16) | (static_cast<uint32_t>(h[3]) << 24);
  if (hl > kMaxFrameBytes) return data_loss("frame header length " + std::to_string(hl) + " exceeds the limit");
  Message m;
  m.header.resize(hl);
  RETURN_IF_ERROR(read_all(fd, m.header.data(), hl, rest_deadline, nullptr));
  uint8_t pl[8];
  RETURN_IF_ERROR(read_all(fd, pl, 8, rest_deadline, nullptr));
  uint64_t plen = 0;
  for (int i = 0; i < 8; ++i) plen |= static_cast<uint64_t>(pl[i]) << (8 * i);
  if (plen > kMaxFrameBytes) return data_loss("frame payload length " + std::to_string(plen) + " exceeds the limit");
  m.payload.resize(plen);
  RETURN_IF_ERROR(read_all(fd, m.payload.data(), plen, rest_deadline, nullptr));
  return m;
}

}  // namespace steadyocr::engine
