// What the two kinds of backend plugin (CUDA: cuda_plugin.h, Vulkan: vulkan_plugin.h) share on the host side: where
// plugin files are looked for, the Status of a call through a table, and the Backend/PreparedGraph that reach a
// plugin's objects only through its C table (the tables name these functions alike).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/common/plugin_status.h"
#include "core/status.h"

namespace steadyocr::runtime {

bool is_file(const std::string& path);
bool is_dir(const std::string& path);

// The folders a plugin is looked for in, in order: the executable's folder, its parent (tests run from
// build/tests), lib/steadyocr beside bin/ (the installed layout, cmake/Install.cmake).
std::vector<std::string> plugin_dirs();

// The Status of a call into a plugin, carrying the plugin's finding (the doctor's code naming the cause; its fix is
// the knowledge base's).
Status status_from_plugin(const SoPluginStatus& status);

// A prepared graph inside a plugin, reached through the table.
template <typename Api>
class TablePreparedGraph final : public PreparedGraph {
 public:
  TablePreparedGraph(const Api* api, void* handle) : api_(api), handle_(handle) {
    if constexpr (requires { api_->runs_concurrently; }) concurrent_ = api_->runs_concurrently(handle_) != 0;
  }
  ~TablePreparedGraph() override { api_->destroy_prepared(handle_); }
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
    SoPluginStatus st{};
    api_->run(handle_, &inputs, outputs, &st);
    return status_from_plugin(st);
  }
  size_t workspace_bytes() const override { return api_->workspace_bytes(handle_); }
  bool concurrent() const override { return concurrent_; }
  double last_plan_ms() const override {
    if constexpr (requires { api_->last_plan_ms; }) {  // tables with shape-free plans
      return api_->last_plan_ms(handle_);
    } else {
      return 0;
    }
  }
  RunProfile last_profile() const override {
    if constexpr (requires { api_->last_profile; }) {  // tables that report profiles (the CUDA plugin's)
      SoRunProfile p{};
      api_->last_profile(handle_, &p);
      return {p.measured != 0, p.acquire_ms, p.staging_ms, p.upload_ms, p.compute_ms, p.download_ms, p.sync_ms};
    } else {
      return {};
    }
  }

 private:
  const Api* api_;
  void* handle_;
  bool concurrent_ = false;  // its run may be called by several threads at once (the table says so)
};

// A backend inside a plugin, reached through the table; name and device info are fixed at creation.
template <typename Api>
class TableBackend final : public Backend {
 public:
  TableBackend(const Api* api, void* handle, std::string name, DeviceInfo info, const char* plugin)
      : api_(api), handle_(handle), name_(std::move(name)), info_(std::move(info)), plugin_(plugin) {}
  ~TableBackend() override { api_->destroy_backend(handle_); }
  std::string name() const override { return name_; }
  DeviceInfo device_info() const override { return info_; }
  bool supports(const graph::Node& node) const override { return api_->supports(handle_, &node) != 0; }
  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override {
    return prepared_by(api_->prepare, graph);
  }
  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override {
    if constexpr (requires { api_->prepare_symbolic; }) {  // tables with shape-free plans
      return prepared_by(api_->prepare_symbolic, graph);
    } else {
      return Backend::prepare_symbolic(graph);
    }
  }

 private:
  using PrepareFn = int (*)(void*, const void*, void**, SoPluginStatus*);
  Result<std::unique_ptr<PreparedGraph>> prepared_by(PrepareFn fn, const graph::Graph& graph) {
    SoPluginStatus st{};
    void* prepared = nullptr;
    fn(handle_, &graph, &prepared, &st);
    if (st.code != 0 || !prepared) {
      if (st.code == 0) return internal_error(std::string(plugin_) + " prepared no graph and gave no reason");
      return status_from_plugin(st);
    }
    return std::unique_ptr<PreparedGraph>(new TablePreparedGraph<Api>(api_, prepared));
  }

  const Api* api_;
  void* handle_;
  std::string name_;
  DeviceInfo info_;
  const char* plugin_;
};

}  // namespace steadyocr::runtime
