#include "backends/common/arena.h"

#include <algorithm>
#include <utility>

namespace steadyocr::common {
namespace {

size_t align_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

}  // namespace

void ArenaBuffer::touch(int step) {
  first = std::min(first, step);
  last = std::max(last, step);
}

void ArenaBuffer::whole_run() {
  first = INT_MIN;
  last = INT_MAX;
}

ArenaLayout plan_arena(const std::vector<ArenaBuffer>& buffers, const ArenaOptions& options) {
  const size_t align = std::max<size_t>(options.alignment, 1);
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(buffers.size()); ++i) {
    if (buffers[i].used()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return buffers[a].bytes > buffers[b].bytes; });
  auto size_of = [&](int i) { return align_up(std::max<size_t>(buffers[i].bytes, 1), align); };
  std::vector<int> placed;
  std::vector<std::pair<size_t, size_t>> busy;
  size_t total = 0;
  for (int id : order) {
    const ArenaBuffer& b = buffers[id];
    const size_t need = size_of(id);
    size_t off = total;
    if (options.reuse) {
      busy.clear();
      for (int p : placed) {
        const ArenaBuffer& o = buffers[p];
        if (o.first <= b.last && b.first <= o.last) busy.push_back({layout.offsets[p], layout.offsets[p] + size_of(p)});
      }
      std::sort(busy.begin(), busy.end());
      off = 0;
      for (const auto& [s, e] : busy) {
        if (off + need <= s) break;
        off = std::max(off, e);
      }
    }
    layout.offsets[id] = off;
    total = std::max(total, off + need);
    placed.push_back(id);
  }
  layout.bytes = total;
  return layout;
}

}  // namespace steadyocr::common
