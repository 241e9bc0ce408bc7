// How much memory this process may still take: the kernel's estimate of what is available without swapping
// (/proc/meminfo's MemAvailable), lowered by the limit of the process's cgroup (v2 memory.max less memory.current;
// v1 memory.limit_in_bytes less memory.usage_in_bytes) when that leaves less, as it does in a container. Used to
// size work that multiplies memory (the cpu backend's image groups).
#pragma once

#include <cstdint>
#include <string_view>

namespace steadyocr::host_memory {

// MemAvailable of /proc/meminfo's text, in bytes; -1 when absent.
int64_t parse_meminfo_available(std::string_view meminfo);
// Room left under a cgroup limit, from the limit file's text ("max", or bytes; v1's huge "unlimited" value counts as
// none) and the usage file's text: bytes (at least 0), or -1 when there is no limit or the texts do not parse.
int64_t cgroup_room(std::string_view limit_text, std::string_view usage_text);
// The lesser of the two for this process; -1 when neither can be read.
int64_t available_bytes();

}  // namespace steadyocr::host_memory
