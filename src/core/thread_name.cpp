#include "core/thread_name.h"

#include <pthread.h>

#include <algorithm>

namespace steadyocr {

void name_this_thread(std::string_view name) {
  char buf[16] = {};
  name.copy(buf, std::min<size_t>(name.size(), sizeof(buf) - 1));
  ::pthread_setname_np(::pthread_self(), buf);
}

std::string this_thread_name() {
  char buf[16] = {};
  if (::pthread_getname_np(::pthread_self(), buf, sizeof(buf)) != 0) return {};
  return buf;
}

}  // namespace steadyocr
