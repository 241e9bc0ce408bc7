// A worker for supervisor tests. Request header {"op": ...}:
//   echo: reply with the payload; error: a job-level error; fault: a sticky device fault (kDeviceFault);
//   crash: abort(); hang: sleep forever; crash_once: crash if the marker file $TEST_WORKER_MARKER is absent
//   (creating it), else echo — models a fault that a restarted worker does not hit again.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/supervisor.h"

using namespace steadyocr;
using namespace steadyocr::engine;

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--refuse") return refuse_worker(unavailable("no device for this test"));
  if (argc > 1 && std::string(argv[1]) == "--die-at-start") return 9;
  auto handler = [](const Message& m) -> Result<Message> {
    auto h = nlohmann::json::parse(m.header);
    std::string op = h.value("op", "echo");
    if (op == "error") return invalid_argument("bad job");
    if (op == "fault") return Status(StatusCode::kDeviceFault, "illegal address (injected)");
    if (op == "crash") std::abort();
    if (op == "hang") {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (op == "crash_once") {
      const char* marker = std::getenv("TEST_WORKER_MARKER");
      if (marker && !std::ifstream(marker).good()) {
        std::ofstream(marker) << "x";
        std::abort();
      }
    }
    return Message{nlohmann::json{{"pid", ::getpid()}}.dump(), m.payload};
  };
  return serve_worker(nlohmann::json{{"ready", true}, {"pid", ::getpid()}}.dump(), handler, 2);
}
