#include "backends/vulkan/backend.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "backends/common/schedule.h"
#include "backends/vulkan/device.h"
#include "backends/vulkan/plan.h"

namespace steadyocr::vk {
namespace {

const char* type_name(int t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

class VulkanBackend final : public Backend {
 public:
  VulkanBackend(std::shared_ptr<Device> device, bool f16)
      : device_(std::move(device)), weights_(std::make_shared<WeightCache>(device_)), f16_(f16) {}

  std::string name() const override { return f16_ ? "vulkan-fp16" : "vulkan"; }

  DeviceInfo device_info() const override {
    const SoVkDeviceInfo& d = device_->info();
    const InstanceState& st = instance_state();
    DeviceInfo i;
    i.backend = name();
    i.name = fmt::format("{} (Vulkan {}, {})", d.name, version_text(d.api_version), type_name(d.type));
    i.memory_bytes = static_cast<int64_t>(d.device_local_bytes);
    i.driver_version = d.driver_info[0] ? d.driver_info : std::to_string(d.driver_version);
    i.libraries["vulkan_loader"] = fmt::format("{} ({})", version_text(st.info.instance_version), st.info.loader_path);
    i.libraries["vulkan_driver"] = fmt::format("{} {}", d.driver_name, d.driver_info);
    if (d.pci_bus_id[0]) i.libraries["vulkan_pci_bus_id"] = d.pci_bus_id;
    i.libraries["vulkan_uuid"] = d.uuid;
    return i;
  }

  bool supports(const graph::Node& node) const override { return op_supported(node, f16_, nullptr); }

  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override {
    RETURN_IF_ERROR(device_usable());
    graph::Graph g = graph.clone();
    graph::expand_epilogues(g);  // every stage is its own dispatch
    for (const auto& n : g.nodes()) {
      if (!supports(*n) && !common::is_folded(*n)) {
        std::string why;
        op_supported(*n, f16_, &why);
        return unsupported(fmt::format("{}: {}", n->describe(), why));
      }
    }
    ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, Plan::build(g, device_, weights_.get(), f16_));
    return std::unique_ptr<PreparedGraph>(std::move(plan));
  }

  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override {
    RETURN_IF_ERROR(device_usable());
    ASSIGN_OR_RETURN(std::unique_ptr<SymbolicPlan> plan, SymbolicPlan::create(graph, device_, weights_, f16_));
    return std::unique_ptr<PreparedGraph>(std::move(plan));
  }

 private:
  Status device_usable() const {
    if (!device_->lost()) return Status::ok();
    return vk_status(StatusCode::kDeviceFault, "L3_VULKAN_DEVICE_LOST",
                     "the Vulkan device was lost: restart the process (the engine's recovery does)");
  }
  std::shared_ptr<Device> device_;
  std::shared_ptr<WeightCache> weights_;  // shared with the shape-free plans, which build instances after prepare
  bool f16_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_vulkan_backend(const SoVkBackendConfig& config) {
  const std::string precision = config.precision ? config.precision : "fp32";
  if (precision != "fp32" && precision != "fp16") {
    return invalid_argument(fmt::format("the Vulkan backend runs fp32 or fp16 ('{}' asked)", precision));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Device> device, Device::create(config.device, config.memory_budget_bytes));
  const bool f16 = precision == "fp16";
  if (f16 && !device->info().storage_fp16) {
    return vk_status(StatusCode::kUnavailable, "L3_VULKAN_NO_FP16",
                     fmt::format("{} offers no 16-bit storage buffers (storageBuffer16BitAccess): vulkan-fp16 cannot "
                                 "run there; use vulkan",
                                 device->info().name));
  }
  return std::unique_ptr<Backend>(new VulkanBackend(std::move(device), f16));
}

std::string chain_check_json() {
  using nlohmann::json;
  json steps = json::array();
  json out;
  auto step = [&](const std::string& name, bool ok, json evidence, const std::string& code = "",
                  const std::string& error = "") {
    json s = {{"step", name}, {"status", ok ? "pass" : "fail"}, {"evidence", std::move(evidence)}};
    if (!ok) {
      s["code"] = code;
      s["error"] = error;
    }
    steps.push_back(std::move(s));
    return ok;
  };
  auto finish = [&](const std::string& status, const std::string& code, const std::string& error) {
    out["status"] = status;
    if (!code.empty()) out["code"] = code;
    if (!error.empty()) out["error"] = error;
    out["steps"] = steps;
    return out.dump();
  };
  const LoaderLoad& l = loader_load();
  if (!step("loader", l.usable, {{"path", l.path}}, l.finding, l.error)) return finish("fail", l.finding, l.error);
  const InstanceState& st = instance_state();
  const SoVkRuntimeInfo& ri = st.info;
  const bool inst = ri.instance_created != 0;
  if (!step("instance", inst, {{"instance_version", version_text(ri.instance_version)}}, ri.finding, ri.error)) {
    return finish("fail", ri.finding, ri.error);
  }
  json devs = json::array();
  for (const SoVkDeviceInfo& d : st.devices) {
    devs.push_back({{"name", d.name},
                    {"type", type_name(d.type)},
                    {"api_version", version_text(d.api_version)},
                    {"driver", fmt::format("{} {}", d.driver_name, d.driver_info)},
                    {"uuid", d.uuid},
                    {"pci_bus_id", d.pci_bus_id},
                    {"device_local_mib", d.device_local_bytes >> 20},
                    {"compute_queue_family", d.compute_queue_family},
                    {"shader_fp16", d.shader_fp16 != 0},
                    {"storage_fp16", d.storage_fp16 != 0},
                    {"subgroup_size", d.subgroup_size}});
  }
  if (!step("devices", !st.devices.empty(), {{"enumerated", ri.device_count}, {"usable", devs}}, ri.finding,
            ri.error)) {
    return finish("fail", ri.finding, ri.error);
  }
  // On each usable device: a logical device with its compute queue, a buffer of device memory, and a small shader
  // (y = hard_swish(x) on 4096 values) compared with the host.
  bool all_ok = true;
  std::string first_code, first_error;
  for (size_t i = 0; i < st.devices.size(); ++i) {
    const std::string name = st.devices[i].name;
    auto fail = [&](const std::string& what, const Status& s) {
      const std::string code = s.finding() ? s.finding()->code : "L3_VULKAN_DEVICE_FAILED";
      step(what, false, {{"device", name}}, code, s.message());
      if (all_ok) {
        first_code = code;
        first_error = s.message();
      }
      all_ok = false;
    };
    SoVkBackendConfig cfg{sizeof(SoVkBackendConfig), "fp32", static_cast<int>(i), 0, 0};
    auto backend = make_vulkan_backend(cfg);
    if (!backend.is_ok()) {
      fail("queue", backend.status());
      continue;
    }
    step("queue", true, {{"device", name}, {"family", st.devices[i].compute_queue_family}});
    graph::Graph g;
    const Shape shape = {1, 4, 32, 32};
    graph::Value* x = g.add_value("x", DType::kF32, shape);
    graph::Value* y = g.add_value("y", DType::kF32, shape);
    g.inputs().push_back(x);
    g.outputs().push_back(y);
    g.add_node(graph::OpKind::kHardSwish, "probe", {x}, {y}, graph::ActAttrs{graph::Activation::hard_swish()});
    Tensor in = Tensor::empty(DType::kF32, shape);
    for (int64_t k = 0; k < in.numel(); ++k) in.data<float>()[k] = static_cast<float>(k % 97) / 8.f - 6.f;
    auto prepared = (*backend)->prepare(g);
    if (!prepared.is_ok()) {
      fail("memory", prepared.status());
      continue;
    }
    step("memory", true, {{"device", name}, {"plan_bytes", (*prepared)->workspace_bytes()}});
    std::vector<Tensor> outs;
    Status rs = (*prepared)->run({in}, &outs);
    if (!rs.is_ok()) {
      fail("shader", rs);
      continue;
    }
    double worst = 0;
    for (int64_t k = 0; k < in.numel(); ++k) {
      const float v = in.data<float>()[k];
      const float want = graph::Activation::hard_swish().apply(v);
      worst = std::max(worst, static_cast<double>(std::fabs(outs[0].data<float>()[k] - want)));
    }
    if (worst > 1e-5) {
      fail("shader", vk_status(StatusCode::kInternal, "L3_VULKAN_SELF_TEST",
                               fmt::format("hard_swish on {} differs from the host by up to {:.3g}", name, worst)));
      continue;
    }
    step("shader", true, {{"device", name}, {"max_abs_error", worst}, {"values", in.numel()}});
  }
  return all_ok ? finish("pass", "", "") : finish("fail", first_code, first_error);
}

}  // namespace steadyocr::vk
