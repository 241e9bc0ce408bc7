#include "backends/vulkan/plan.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "core/half.h"

#include "backends/common/schedule.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "core/timer.h"
#include "graph/symbolic.h"

namespace steadyocr::vk {
namespace {

constexpr uint32_t kMaxGroupsX = 65535;

size_t round_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

constexpr size_t kChunkBytes = size_t{16} << 20;

WeightCache::~WeightCache() {
  const VkApi& a = vkapi();
  if (fence_ && !device_->settle(fence_, "uploading weights")) {
    leak(std::move(staging_));  // the device may still read them (logged by settle)
    leak(std::move(chunks_));
    leak(device_);
    return;
  }
  if (fence_) a.vkDestroyFence(device_->handle(), fence_, nullptr);
  if (pool_) a.vkDestroyCommandPool(device_->handle(), pool_, nullptr);
}

size_t WeightCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

Status WeightCache::upload_locked(const void* data, size_t bytes, const WeightRef& dst) {
  const VkApi& a = vkapi();
  VkResult r;
  if (!pool_) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = device_->queue_family();
    if ((r = a.vkCreateCommandPool(device_->handle(), &pci, nullptr, &pool_)) != VK_SUCCESS) {
      pool_ = VK_NULL_HANDLE;
      return vk_error(r, "vkCreateCommandPool (weights)");
    }
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if ((r = a.vkAllocateCommandBuffers(device_->handle(), &ai, &cb_)) != VK_SUCCESS) {
      return vk_error(r, "vkAllocateCommandBuffers (weights)");
    }
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = a.vkCreateFence(device_->handle(), &fci, nullptr, &fence_)) != VK_SUCCESS) {
      return vk_error(r, "vkCreateFence (weights)");
    }
  }
  if (!staging_ || staging_->bytes() < bytes) {
    staging_.reset();
    ASSIGN_OR_RETURN(staging_,
                     device_->allocate(std::max(bytes, size_t{4} << 20), Memory::kHostUpload, "weight staging"));
  }
  std::memcpy(staging_->map(), data, bytes);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if ((r = a.vkBeginCommandBuffer(cb_, &bi)) != VK_SUCCESS) return vk_error(r, "vkBeginCommandBuffer (weights)");
  VkBufferCopy c{0, dst.offset, bytes};
  a.vkCmdCopyBuffer(cb_, staging_->buffer(), dst.chunk->buffer(), 1, &c);
  if ((r = a.vkEndCommandBuffer(cb_)) != VK_SUCCESS) return vk_error(r, "vkEndCommandBuffer (weights)");
  return device_->submit_and_wait(cb_, fence_, "uploading weights");
}

Result<WeightRef> WeightCache::get(const void* data, size_t bytes, const std::string& name) {
  const auto key = std::make_pair(hash_bytes(data, bytes), bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const size_t align = device_->storage_alignment();
  const size_t need = round_up(std::max<size_t>(bytes, 4), align);
  WeightRef ref;
  if (need > kChunkBytes) {  // a weight of its own size
    ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> own, device_->allocate(need, Memory::kDevice, "weight " + name));
    ref.chunk = std::move(own);
  } else {
    if (chunks_.empty() || chunk_used_ + need > kChunkBytes) {
      ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> c, device_->allocate(kChunkBytes, Memory::kDevice, "weights"));
      chunks_.push_back(std::move(c));
      chunk_used_ = 0;
    }
    ref.chunk = chunks_.back();
    ref.offset = chunk_used_;
    chunk_used_ += need;
  }
  ref.bytes = bytes;
  RETURN_IF_ERROR(upload_locked(data, bytes, ref));
  bytes_ += need;
  cache_[key] = ref;
  return ref;
}

std::optional<WeightRef> WeightCache::known(const void* data, const std::shared_ptr<void>& owner, size_t bytes,
                                            bool f16) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(data);
  if (it == known_.end()) return std::nullopt;
  const Known& k = it->second;
  // The same control block: the same storage, alive (a freed one's address may have come back for other bytes).
  const bool same = !k.owner.owner_before(owner) && !owner.owner_before(k.owner) && !k.owner.expired();
  if (!same || k.bytes != bytes || k.f16 != f16) return std::nullopt;
  return k.ref;
}

void WeightCache::remember(const void* data, const std::shared_ptr<void>& owner, size_t bytes, bool f16,
                           const WeightRef& ref) {
  std::lock_guard<std::mutex> lock(mu_);
  known_[data] = Known{owner, bytes, f16, ref};
  if (known_.size() > 2 * known_pruned_ + 64) {  // models unloaded leave entries whose storage is gone
    for (auto it = known_.begin(); it != known_.end();) {
      it = it->second.owner.expired() ? known_.erase(it) : std::next(it);
    }
    known_pruned_ = known_.size();
  }
}

int PlanBuilder::root_of(int id) const {
  while (bufs_[static_cast<size_t>(id)].kind == BufKind::kView) id = bufs_[static_cast<size_t>(id)].root;
  return id;
}

void PlanBuilder::touch(int id) {
  bufs_[static_cast<size_t>(root_of(id))].live.touch(static_cast<int>(dispatches_.size()));
}

Result<WeightRef> PlanBuilder::weight(const void* data, size_t bytes, DType dt, const std::string& name,
                                      const std::shared_ptr<void>& owner) {
  const bool half = f16_ && dt == DType::kF32;
  if (owner) {
    if (std::optional<WeightRef> ref = weights_->known(data, owner, bytes, half)) return *std::move(ref);
  }
  WeightRef ref;
  if (!half) {
    ASSIGN_OR_RETURN(ref, weights_->get(data, bytes, name));
  } else {
    const size_t n = bytes / 4;
    std::vector<uint16_t> h(n);
    const auto* f = static_cast<const float*>(data);
    for (size_t i = 0; i < n; ++i) h[i] = float_to_half(f[i]);
    ASSIGN_OR_RETURN(ref, weights_->get(h.data(), n * 2, name));
  }
  if (owner) weights_->remember(data, owner, bytes, half, ref);
  return ref;
}

Result<int> PlanBuilder::in(const graph::Value* v) {
  if (!v) return internal_error("a missing input was read");
  auto it = of_value_.find(v);
  if (it != of_value_.end()) return it->second;
  if (!v->is_constant()) return internal_error(fmt::format("value '{}' is read before it is written", v->name));
  if (v->constant.nbytes() == 0) return invalid_argument(fmt::format("constant '{}' is empty", v->name));
  ASSIGN_OR_RETURN(WeightRef w, weight(v->constant.raw(), v->constant.nbytes(), v->constant.dtype(), v->name,
                                       v->constant.storage()));
  Buf b;
  b.dtype = v->constant.dtype();
  b.bytes = static_cast<size_t>(v->constant.numel()) * element_bytes(b.dtype);
  b.kind = BufKind::kWeight;
  b.weight = std::move(w);
  b.value = v;
  bufs_.push_back(std::move(b));
  const int id = static_cast<int>(bufs_.size()) - 1;
  of_value_[v] = id;
  return id;
}

int PlanBuilder::out(const graph::Value* v) {
  Buf b;
  b.dtype = v->dtype;
  b.bytes = static_cast<size_t>(shape_numel(v->shape)) * element_bytes(v->dtype);
  b.value = v;
  bufs_.push_back(std::move(b));
  const int id = static_cast<int>(bufs_.size()) - 1;
  of_value_[v] = id;
  return id;
}

int PlanBuilder::view(const graph::Value* v, int of) {
  Buf b;
  b.dtype = v->dtype;
  b.bytes = static_cast<size_t>(shape_numel(v->shape)) * element_bytes(v->dtype);
  b.kind = BufKind::kView;
  b.root = of;
  b.value = v;
  bufs_.push_back(std::move(b));
  const int id = static_cast<int>(bufs_.size()) - 1;
  of_value_[v] = id;
  return id;
}

Status PlanBuilder::constant(const graph::Value* v, const Tensor& t) {
  ASSIGN_OR_RETURN(WeightRef w, weight(t.raw(), t.nbytes(), t.dtype(), "constant " + v->name, t.storage()));
  Buf b;
  b.dtype = t.dtype();
  b.bytes = static_cast<size_t>(t.numel()) * element_bytes(t.dtype());
  b.kind = BufKind::kWeight;
  b.weight = std::move(w);
  b.value = v;
  bufs_.push_back(std::move(b));
  of_value_[v] = static_cast<int>(bufs_.size()) - 1;
  return Status::ok();
}

Result<int> PlanBuilder::table(const std::vector<float>& values, const std::string& name) {
  ASSIGN_OR_RETURN(WeightRef w, weight(values.data(), values.size() * sizeof(float), DType::kF32, "table " + name));
  Buf b;
  b.bytes = values.size() * element_bytes(DType::kF32);
  b.kind = BufKind::kWeight;
  b.weight = std::move(w);
  bufs_.push_back(std::move(b));
  return static_cast<int>(bufs_.size()) - 1;
}

void PlanBuilder::add(Dispatch d, const graph::Node& n) {
  for (int t : d.tensors) {
    if (t >= 0) touch(t);  // -1: an optional operand that is absent
  }
  d.f16 = f16_ && d.shader != Shader::kCast && !d.words;
  d.node = &n;
  dispatches_.push_back(std::move(d));
}

void PlanBuilder::add_1d(Shader s, std::vector<uint32_t> params, std::vector<int> tensors, uint64_t invocations,
                         const graph::Node& n, bool words) {
  add_rows(s, std::move(params), std::move(tensors), (invocations + 255) / 256, n, words);
}

void PlanBuilder::add_rows(Shader s, std::vector<uint32_t> params, std::vector<int> tensors, uint64_t groups,
                           const graph::Node& n, bool words) {
  if (groups == 0) return;  // nothing to compute (an empty tensor)
  Dispatch d;
  d.shader = s;
  d.words = words;
  d.params = std::move(params);
  d.tensors = std::move(tensors);
  const uint64_t gx = std::min<uint64_t>(groups, kMaxGroupsX);
  d.groups[0] = static_cast<uint32_t>(gx);
  d.groups[1] = static_cast<uint32_t>((groups + gx - 1) / gx);
  add(std::move(d), n);
}

Result<std::unique_ptr<Plan>> Plan::build(const graph::Graph& g, std::shared_ptr<Device> device, WeightCache* weights,
                                          bool f16, const InstanceContext& context) {
  PlanBuilder b(device, weights, f16);
  if (context.order) {  // an instance of a shape-free plan: about as many as its schedule's nodes
    b.bufs_.reserve(3 * context.order->size());
    b.dispatches_.reserve(context.order->size() + 16);
    b.of_value_.reserve(3 * context.order->size());
  }
  for (const graph::Value* v : g.inputs()) {
    if (!v->has_static_shape()) return invalid_argument(fmt::format("input '{}' has no static shape", v->name));
    const int id = b.out(v);
    b.bufs_[static_cast<size_t>(id)].live.whole_run();
  }
  Stopwatch sw;
  std::vector<const graph::Node*> scheduled;
  if (!context.order) {
    ASSIGN_OR_RETURN(scheduled, common::schedule(g, common::ScheduleOrder::kGraph));
  }
  for (const graph::Node* n : context.order ? *context.order : scheduled) {
    if (common::is_folded(*n)) continue;
    std::string why;
    if (!op_supported(*n, f16, &why)) return unsupported(fmt::format("{}: {}", n->describe(), why));
    Status st = build_node(b, *n);
    if (!st.is_ok()) return Status(st.code(), fmt::format("{}: {}", n->describe(), st.message()));
  }
  if (context.times) context.times->walk = sw.elapsed_ms();
  std::unique_ptr<Plan> plan(new Plan());
  plan->device_ = std::move(device);
  Stopwatch finishing;
  RETURN_IF_ERROR(plan->finish(b, g, context.shared, context.spare));
  if (context.times) context.times->memory = finishing.elapsed_ms();
  RETURN_IF_ERROR(plan->record(context.times, context.spare));
  return plan;
}

Status Plan::finish(PlanBuilder& b, const graph::Graph& g, SharedBuffers* shared, InstanceObjects* spare) {
  // Graph outputs: computed ones live for the whole run; a constant output gets a weight buffer.
  for (const graph::Value* v : g.outputs()) {
    ASSIGN_OR_RETURN(int id, b.in(v));
    b.bufs_[static_cast<size_t>(b.root_of(id))].live.whole_run();
  }
  const size_t align = device_->storage_alignment();
  std::vector<common::ArenaBuffer> places;
  std::vector<int> placed;
  for (size_t i = 0; i < b.bufs_.size(); ++i) {
    Buf& x = b.bufs_[i];
    if (x.kind != BufKind::kArena || !x.live.used()) continue;
    common::ArenaBuffer a = x.live;
    a.bytes = round_up(std::max<size_t>(x.bytes, 4), 4);  // the whole words its binding covers
    places.push_back(a);
    placed.push_back(static_cast<int>(i));
  }
  const common::ArenaLayout layout = common::plan_arena(places, {align, true});
  for (size_t k = 0; k < placed.size(); ++k) b.bufs_[static_cast<size_t>(placed[k])].offset = layout.offsets[k];
  // A view's bytes are its root's.
  for (Buf& x : b.bufs_) {
    if (x.kind == BufKind::kView) x.root = b.root_of(x.root);
  }
  bufs_ = std::move(b.bufs_);
  dispatches_ = std::move(b.dispatches_);

  auto port = [&](const graph::Value* v, int id, size_t* staging) {
    Port p;
    p.buf = id;
    p.dtype = v->dtype;
    p.shape = v->shape;
    p.bytes = static_cast<size_t>(shape_numel(v->shape)) * dtype_size(v->dtype);
    p.device_bytes = static_cast<size_t>(shape_numel(v->shape)) * b.element_bytes(v->dtype);
    p.half = p.device_bytes != p.bytes;
    p.staging_offset = *staging;
    p.name = v->name;
    *staging += round_up(std::max<size_t>(p.device_bytes, 4), 16);
    return p;
  };
  size_t in_bytes = 0, out_bytes = 0;
  for (const graph::Value* v : g.inputs()) inputs_.push_back(port(v, b.of_value_.at(v), &in_bytes));
  for (const graph::Value* v : g.outputs()) outputs_.push_back(port(v, b.of_value_.at(v), &out_bytes));

  // Own buffers, or the shared ones, replaced by larger ones when this shape needs more (with a quarter's headroom,
  // so that a run of growing shapes does not replace them every time).
  auto place = [&](std::shared_ptr<DeviceBuffer>* own, std::shared_ptr<DeviceBuffer>* common, size_t need, Memory kind,
                   const char* what) -> Status {
    need = std::max<size_t>(need, 16);
    if (!common) {
      ASSIGN_OR_RETURN(*own, device_->allocate(need, kind, what));
      return Status::ok();
    }
    if (!*common || (*common)->bytes() < need) {
      const size_t grown = *common ? std::max(need, (*common)->bytes() + (*common)->bytes() / 4) : need;
      if (*common) shared->grown = true;
      common->reset();  // the instances that hold the old buffer keep it until they go
      ASSIGN_OR_RETURN(*common, device_->allocate(grown, kind, what));
    }
    *own = *common;
    return Status::ok();
  };
  shared_ = shared != nullptr;
  RETURN_IF_ERROR(place(&arena_, shared ? &shared->arena : nullptr, layout.bytes, Memory::kDevice, "plan arena"));
  size_t param_bytes = 0;
  for (const Dispatch& d : dispatches_) {
    param_offsets_.push_back(param_bytes);
    param_bytes += round_up(std::max<size_t>(d.params.size(), 1) * 4, align);
  }
  param_bytes = std::max<size_t>(param_bytes, 16);
  param_used_ = param_bytes;
  if (spare && spare->params && spare->params->bytes() >= param_bytes) {
    params_ = std::move(spare->params);
  } else {
    ASSIGN_OR_RETURN(params_, device_->allocate(param_bytes, Memory::kHostUpload, "parameters"));
  }
  for (size_t i = 0; i < dispatches_.size(); ++i) {
    std::memcpy(static_cast<char*>(params_->map()) + param_offsets_[i], dispatches_[i].params.data(),
                dispatches_[i].params.size() * 4);
  }
  RETURN_IF_ERROR(
      place(&staging_in_, shared ? &shared->staging_in : nullptr, in_bytes, Memory::kHostUpload, "input staging"));
  RETURN_IF_ERROR(place(&staging_out_, shared ? &shared->staging_out : nullptr, out_bytes, Memory::kHostReadback,
                        "output staging"));
  return Status::ok();
}

Result<InstanceObjects> make_instance_objects(const std::shared_ptr<Device>& device, uint32_t sets,
                                              size_t param_bytes) {
  const VkApi& a = vkapi();
  const VkDevice dev = device->handle();
  InstanceObjects o;
  auto fail = [&](VkResult r, const char* what) {
    destroy_instance_objects(*device, &o);
    return vk_error(r, what);
  };
  VkResult r;
  sets = std::max<uint32_t>(sets, 1);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * Device::kBindings};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = sets;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  if ((r = a.vkCreateDescriptorPool(dev, &dpi, nullptr, &o.pool)) != VK_SUCCESS) {
    o.pool = VK_NULL_HANDLE;
    return fail(r, "vkCreateDescriptorPool");
  }
  o.sets = sets;
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.queueFamilyIndex = device->queue_family();
  if ((r = a.vkCreateCommandPool(dev, &cpi, nullptr, &o.cmd_pool)) != VK_SUCCESS) {
    o.cmd_pool = VK_NULL_HANDLE;
    return fail(r, "vkCreateCommandPool");
  }
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if ((r = a.vkCreateFence(dev, &fci, nullptr, &o.fence)) != VK_SUCCESS) {
    o.fence = VK_NULL_HANDLE;
    return fail(r, "vkCreateFence");
  }
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = o.cmd_pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  if ((r = a.vkAllocateCommandBuffers(dev, &cai, &o.cmd)) != VK_SUCCESS) {
    o.cmd = VK_NULL_HANDLE;
    return fail(r, "vkAllocateCommandBuffers");
  }
  if (param_bytes > 0) {
    auto params = device->allocate(param_bytes, Memory::kHostUpload, "parameters");
    if (!params.is_ok()) {
      destroy_instance_objects(*device, &o);
      return params.status();
    }
    o.params = std::move(params).value();
  }
  return o;
}

void destroy_instance_objects(const Device& device, InstanceObjects* o) {
  const VkApi& a = vkapi();
  const VkDevice dev = device.handle();
  if (o->fence) a.vkDestroyFence(dev, o->fence, nullptr);
  if (o->cmd_pool) a.vkDestroyCommandPool(dev, o->cmd_pool, nullptr);  // and its command buffer
  if (o->pool) a.vkDestroyDescriptorPool(dev, o->pool, nullptr);
  o->fence = VK_NULL_HANDLE;
  o->cmd_pool = VK_NULL_HANDLE;
  o->cmd = VK_NULL_HANDLE;
  o->pool = VK_NULL_HANDLE;
  o->sets = 0;
  o->params.reset();
}

Status Plan::record(InstanceTimes* times, InstanceObjects* spare) {
  Stopwatch sw;
  double lap = 0;
  auto split = [&](double InstanceTimes::*field) {
    const double now = sw.elapsed_ms();
    if (times) times->*field = now - lap;
    lap = now;
  };
  const VkApi& a = vkapi();
  const VkDevice dev = device_->handle();
  VkResult r;
  const uint32_t sets = static_cast<uint32_t>(std::max<size_t>(dispatches_.size(), 1));
  InstanceObjects own;
  InstanceObjects* objects = spare;
  if (!spare || !spare->pool || spare->sets < sets) {
    ASSIGN_OR_RETURN(own, make_instance_objects(device_, sets, 0));
    objects = &own;
  }
  pool_ = std::exchange(objects->pool, VK_NULL_HANDLE);
  cmd_pool_ = std::exchange(objects->cmd_pool, VK_NULL_HANDLE);
  cmd_ = std::exchange(objects->cmd, VK_NULL_HANDLE);
  fence_ = std::exchange(objects->fence, VK_NULL_HANDLE);
  objects->sets = 0;

  VkPhysicalDeviceProperties props{};
  auto where = [&](int id, VkBuffer* buffer, VkDeviceSize* offset, VkDeviceSize* range) {
    const Buf& x = bufs_[static_cast<size_t>(id)];
    const Buf& root = x.kind == BufKind::kView ? bufs_[static_cast<size_t>(x.root)] : x;
    if (root.kind == BufKind::kWeight) {
      *buffer = root.weight.chunk->buffer();
      *offset = root.weight.offset;
    } else {
      *buffer = arena_->buffer();
      *offset = root.offset;
    }
    *range = round_up(std::max<size_t>(root.bytes, 4), 4);  // whole words: byte tensors are written four at a time
  };
  (void)props;

  // A tensor a shader binds must fit the device's largest binding: refused here, with the figures, rather than read
  // past the range.
  for (const Dispatch& d : dispatches_) {
    for (int t : d.tensors) {
      if (t < 0) continue;
      const Buf& x = bufs_[static_cast<size_t>(t)];
      const Buf& root = x.kind == BufKind::kView ? bufs_[static_cast<size_t>(x.root)] : x;
      if (root.bytes > device_->max_binding_bytes()) {
        return Status(
            StatusCode::kResourceExhausted,
            fmt::format("{} ({}): tensor '{}' ({:.1f} MiB) is larger than the device's largest storage buffer "
                        "binding (maxStorageBufferRange {:.1f} MiB): use smaller inputs (--det-limit-side) or "
                        "another backend",
                        d.node ? d.node->describe() : std::string("a dispatch"), shader_code(d.shader, d.f16).name,
                        x.value ? x.value->name : std::string("a table"), root.bytes / 1048576.0,
                        device_->max_binding_bytes() / 1048576.0));
      }
    }
  }
  split(&InstanceTimes::objects);
  std::vector<VkDescriptorSetLayout> layouts(dispatches_.size(), device_->set_layout());
  std::vector<VkDescriptorSet> ds(dispatches_.size());
  if (!dispatches_.empty()) {
    VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dai.descriptorPool = pool_;
    dai.descriptorSetCount = static_cast<uint32_t>(ds.size());
    dai.pSetLayouts = layouts.data();
    if ((r = a.vkAllocateDescriptorSets(dev, &dai, ds.data())) != VK_SUCCESS) {
      return vk_error(r, "vkAllocateDescriptorSets");
    }
  }
  for (size_t i = 0; i < dispatches_.size(); ++i) {
    const Dispatch& d = dispatches_[i];
    std::array<VkDescriptorBufferInfo, Device::kBindings> info{};
    info[0] = {params_->buffer(), param_offsets_[i], std::max<size_t>(d.params.size(), 1) * 4};
    for (uint32_t k = 1; k < Device::kBindings; ++k) {
      if (k - 1 < d.tensors.size() && d.tensors[k - 1] >= 0) {
        where(d.tensors[k - 1], &info[k].buffer, &info[k].offset, &info[k].range);
      } else {
        info[k] = info[0];  // unused by the shader: any valid buffer
      }
    }
    std::array<VkWriteDescriptorSet, Device::kBindings> w{};
    for (uint32_t k = 0; k < Device::kBindings; ++k) {
      w[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w[k].dstSet = ds[i];
      w[k].dstBinding = k;
      w[k].descriptorCount = 1;
      w[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w[k].pBufferInfo = &info[k];
    }
    a.vkUpdateDescriptorSets(dev, Device::kBindings, w.data(), 0, nullptr);
  }
  split(&InstanceTimes::sets);

  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if ((r = a.vkBeginCommandBuffer(cmd_, &bi)) != VK_SUCCESS) return vk_error(r, "vkBeginCommandBuffer");
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                     VkAccessFlags dst_access) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = src_access;
    mb.dstAccessMask = dst_access;
    a.vkCmdPipelineBarrier(cmd_, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
  };
  barrier(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);
  for (const Port& p : inputs_) {
    if (!p.bytes) continue;
    VkBuffer buf;
    VkDeviceSize off, range;
    where(p.buf, &buf, &off, &range);
    VkBufferCopy c{p.staging_offset, off, p.device_bytes};
    a.vkCmdCopyBuffer(cmd_, staging_in_->buffer(), buf, 1, &c);
  }
  barrier(VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (size_t i = 0; i < dispatches_.size(); ++i) {
    const Dispatch& d = dispatches_[i];
    ASSIGN_OR_RETURN(VkPipeline pipe, device_->pipeline(d.shader, d.f16));
    a.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    a.vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, device_->pipeline_layout(), 0, 1, &ds[i], 0,
                              nullptr);
    a.vkCmdDispatch(cmd_, d.groups[0], d.groups[1], d.groups[2]);
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  }
  for (const Port& p : outputs_) {
    if (!p.bytes) continue;
    VkBuffer buf;
    VkDeviceSize off, range;
    where(p.buf, &buf, &off, &range);
    VkBufferCopy c{off, p.staging_offset, p.device_bytes};
    a.vkCmdCopyBuffer(cmd_, buf, staging_out_->buffer(), 1, &c);
  }
  barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  if ((r = a.vkEndCommandBuffer(cmd_)) != VK_SUCCESS) return vk_error(r, "vkEndCommandBuffer");
  split(&InstanceTimes::commands);
  // The graph it was built from need not outlive the plan.
  for (Dispatch& d : dispatches_) d.node = nullptr;
  for (Buf& x : bufs_) x.value = nullptr;
  return Status::ok();
}

Plan::~Plan() {
  const VkApi& a = vkapi();
  if (!device_) return;
  const VkDevice dev = device_->handle();
  if (fence_ && !device_->settle(fence_, "running the plan")) {
    // The device may still run the command buffer: its objects and memory are leaked, not freed (logged by settle).
    for (auto* b : {&arena_, &staging_in_, &staging_out_}) leak(std::move(*b));
    leak(std::move(params_));
    for (const Buf& x : bufs_) {
      if (x.kind == BufKind::kWeight) leak(x.weight.chunk);
    }
    leak(device_);  // never destroyed: its destructor would wait for the hung queue
    return;
  }
  if (fence_) a.vkDestroyFence(dev, fence_, nullptr);
  if (cmd_pool_) a.vkDestroyCommandPool(dev, cmd_pool_, nullptr);
  if (pool_) a.vkDestroyDescriptorPool(dev, pool_, nullptr);
}

size_t Plan::workspace_bytes() const {
  size_t b = params_ ? params_->bytes() : 0;
  if (shared_) return b;  // the arena and staging are the SymbolicPlan's, counted once there
  for (const auto* x : {&arena_, &staging_in_, &staging_out_}) b += *x ? (*x)->bytes() : 0;
  return b;
}

Status Plan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  if (inputs.size() != inputs_.size()) {
    return invalid_argument(fmt::format("the plan takes {} inputs, {} given", inputs_.size(), inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Port& p = inputs_[i];
    if (inputs[i].dtype() != p.dtype || inputs[i].shape() != p.shape) {
      return invalid_argument(fmt::format("input '{}' is {}, the plan was made for {} {}", p.name, inputs[i].describe(),
                                          dtype_name(p.dtype), shape_str(p.shape)));
    }
    char* dst = static_cast<char*>(staging_in_->map()) + p.staging_offset;
    if (p.half) {
      const float* f = inputs[i].data<float>();
      auto* h = reinterpret_cast<uint16_t*>(dst);
      for (int64_t k = 0; k < inputs[i].numel(); ++k) h[k] = float_to_half(f[k]);
    } else {
      std::memcpy(dst, inputs[i].raw(), p.bytes);
    }
  }
  RETURN_IF_ERROR(device_->submit_and_wait(cmd_, fence_, "running the plan (vkQueueSubmit)"));
  outputs->clear();
  for (const Port& p : outputs_) {
    Tensor t = Tensor::empty(p.dtype, p.shape);
    const char* src = static_cast<const char*>(staging_out_->map()) + p.staging_offset;
    if (p.half) {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      float* f = t.data<float>();
      for (int64_t k = 0; k < t.numel(); ++k) f[k] = half_to_float(h[k]);
    } else {
      std::memcpy(t.raw(), src, p.bytes);
    }
    outputs->push_back(std::move(t));
  }
  return Status::ok();
}

}  // namespace steadyocr::vk
