// host_memory: MemAvailable and a cgroup's room, parsed from the kernel's texts.
#include "core/host_memory.h"

#include <gtest/gtest.h>

namespace steadyocr::host_memory {
namespace {

TEST(HostMemory, MemAvailableFromMeminfo) {
  EXPECT_EQ(parse_meminfo_available("MemTotal:       24600000 kB\nMemFree:         1000 kB\n"
                                    "MemAvailable:   20480000 kB\nBuffers:  1 kB\n"),
            int64_t{20480000} * 1024);
  EXPECT_EQ(parse_meminfo_available("MemAvailable: 7 kB"), 7 * 1024);
  EXPECT_EQ(parse_meminfo_available("MemTotal: 100 kB\n"), -1);  // kernels before 3.14
  EXPECT_EQ(parse_meminfo_available("MemAvailable: lots kB\n"), -1);
  EXPECT_EQ(parse_meminfo_available("MemAvailable: 100 MB\n"), -1);
  EXPECT_EQ(parse_meminfo_available(""), -1);
}

TEST(HostMemory, CgroupRoomUnderItsLimit) {
  EXPECT_EQ(cgroup_room("2147483648\n", "536870912\n"), int64_t{1536} << 20);  // v2: 2 GiB, 512 MiB used
  EXPECT_EQ(cgroup_room("1000\n", "5000\n"), 0);                               // over the limit: no room
  EXPECT_EQ(cgroup_room("max\n", "123\n"), -1);                                // v2 without a limit
  EXPECT_EQ(cgroup_room("9223372036854771712\n", "4096\n"), -1);               // v1's "no limit"
  EXPECT_EQ(cgroup_room("", ""), -1);                                          // no such files
  EXPECT_EQ(cgroup_room("12x", "1"), -1);
}

TEST(HostMemory, ThisMachineHasSomeMemory) {
  const int64_t bytes = available_bytes();
  // Linux has MemAvailable since 3.14: this process can always read some figure, and a test process has room.
  EXPECT_GT(bytes, int64_t{16} << 20);
}

}  // namespace
}  // namespace steadyocr::host_memory
