// Resize and Upsample: mode, coordinate transformation and rounding across opsets 7-18; scales or sizes must be
// constants and become attributes.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "graph/onnx_import_internal.h"

namespace steadyocr::graph::onnx_detail {
namespace {

Status read_resize_mode(NodeContext& c, ResizeAttrs* a) {
  std::string mode = c.attrs->get_string("mode", "nearest");
  if (mode == "nearest") {
    a->mode = ResizeMode::kNearest;
  } else if (mode == "linear" || mode == "bilinear") {
    a->mode = ResizeMode::kLinear;
  } else {
    return c.unsupported_attr(fmt::format("mode '{}' (supported: nearest, linear)", mode));
  }
  return Status::ok();
}

// Opset 7-10 semantics (Upsample, Resize-10): asymmetric coordinates; nearest rounds down when upsampling and up
// when downsampling (ONNX Runtime's behaviour), which we can express only when every axis goes the same way.
Status set_legacy_resize(NodeContext& c, ResizeAttrs* a, const std::vector<float>& scales) {
  a->coord = ResizeCoord::kAsymmetric;
  bool up = std::all_of(scales.begin(), scales.end(), [](float s) { return s >= 1.f; });
  bool down = std::all_of(scales.begin(), scales.end(), [](float s) { return s <= 1.f; });
  if (!up && !down)
    return c.unsupported_attr("opset<11 nearest resize that upsamples some axes and downsamples others");
  a->nearest = up ? ResizeNearest::kFloor : ResizeNearest::kCeil;
  a->scales = scales;
  return Status::ok();
}

Status check_resize_rank(NodeContext& c, size_t n, const char* what) {
  const Shape& in = c.input(0)->shape;
  if (n != in.size()) {
    return c.invalid(fmt::format("{} has {} values but the input {} has rank {}", what, n, shape_str(in), in.size()));
  }
  return Status::ok();
}

}  // namespace

Status map_upsample(NodeContext& c) {
  ResizeAttrs a;
  RETURN_IF_ERROR(read_resize_mode(c, &a));
  std::vector<float> scales;
  if (c.ctx->opset < 9) {
    RETURN_IF_ERROR(expect_inputs(c, 1, 1));
    scales = c.attrs->get_floats("scales");
  } else {
    RETURN_IF_ERROR(expect_inputs(c, 2, 2));
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(1, "scales"));
    scales = t.to_floats();
  }
  RETURN_IF_ERROR(check_resize_rank(c, scales.size(), "scales"));
  RETURN_IF_ERROR(set_legacy_resize(c, &a, scales));
  return c.emit(OpKind::kResize, {c.input(0)}, a).status();
}

Status map_resize(NodeContext& c) {
  ResizeAttrs a;
  RETURN_IF_ERROR(read_resize_mode(c, &a));
  if (c.ctx->opset < 11) {
    RETURN_IF_ERROR(expect_inputs(c, 2, 2));
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(1, "scales"));
    RETURN_IF_ERROR(check_resize_rank(c, static_cast<size_t>(t.numel()), "scales"));
    RETURN_IF_ERROR(set_legacy_resize(c, &a, t.to_floats()));
    return c.emit(OpKind::kResize, {c.input(0)}, a).status();
  }
  RETURN_IF_ERROR(expect_inputs(c, 1, 4));
  static const std::map<std::string, ResizeCoord> kCoords = {{"half_pixel", ResizeCoord::kHalfPixel},
                                                             {"asymmetric", ResizeCoord::kAsymmetric},
                                                             {"align_corners", ResizeCoord::kAlignCorners},
                                                             {"pytorch_half_pixel", ResizeCoord::kPytorchHalfPixel}};
  static const std::map<std::string, ResizeNearest> kNearest = {
      {"round_prefer_floor", ResizeNearest::kRoundPreferFloor},
      {"round_prefer_ceil", ResizeNearest::kRoundPreferCeil},
      {"floor", ResizeNearest::kFloor},
      {"ceil", ResizeNearest::kCeil}};
  std::string coord = c.attrs->get_string("coordinate_transformation_mode", "half_pixel");
  auto ci = kCoords.find(coord);
  if (ci == kCoords.end()) {
    return c.unsupported_attr(
        fmt::format("coordinate_transformation_mode '{}' (supported: half_pixel, asymmetric, "
                    "align_corners, pytorch_half_pixel)",
                    coord));
  }
  a.coord = ci->second;
  std::string nearest = c.attrs->get_string("nearest_mode", "round_prefer_floor");
  auto ni = kNearest.find(nearest);
  if (ni == kNearest.end()) {
    return c.unsupported_attr(
        fmt::format("nearest_mode '{}' (supported: round_prefer_floor, round_prefer_ceil, floor, ceil)", nearest));
  }
  a.nearest = ni->second;
  if (c.attrs->get_int("exclude_outside", 0) != 0) return c.unsupported_attr("exclude_outside=1");
  if (c.attrs->get_int("antialias", 0) != 0) return c.unsupported_attr("antialias=1");
  std::string policy = c.attrs->get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch") return c.unsupported_attr("keep_aspect_ratio_policy '" + policy + "'");
  ignore_attrs(c, {"cubic_coeff_a", "extrapolation_value"});  // cubic / tf_crop_and_resize only, both refused

  const size_t rank = c.input(0)->shape.size();
  std::vector<int64_t> axes;
  if (c.attrs->has("axes")) {
    axes = c.attrs->get_ints("axes");
    for (int64_t& ax : axes) {
      if (ax < 0) ax += static_cast<int64_t>(rank);
      if (ax < 0 || ax >= static_cast<int64_t>(rank)) return c.invalid(fmt::format("axes {} out of range", ax));
    }
  }
  // Expands per-`axes` values to one per input axis (1 / the input size elsewhere).
  auto expand = [&](auto values, auto identity) {
    using T = typename decltype(values)::value_type;
    if (axes.empty()) return values;
    std::vector<T> full(rank);
    for (size_t i = 0; i < rank; ++i) full[i] = identity(i);
    for (size_t i = 0; i < axes.size() && i < values.size(); ++i) full[static_cast<size_t>(axes[i])] = values[i];
    return full;
  };
  size_t expect = axes.empty() ? rank : axes.size();
  if (c.input(2)) {
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(2, "scales"));
    if (t.numel() > 0) {
      if (static_cast<size_t>(t.numel()) != expect) {
        return c.invalid(fmt::format("scales has {} values, expected {}", t.numel(), expect));
      }
      a.scales = expand(t.to_floats(), [](size_t) { return 1.f; });
    }
  }
  if (a.scales.empty()) {
    if (!c.input(3)) return c.invalid("has neither scales nor sizes");
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(3, "sizes"));
    if (t.dtype() != DType::kI64) {
      // ONNX defines sizes as int64; a float tensor here is a broken file (fuzz_onnx found one of 2.6e32).
      return c.invalid(fmt::format("sizes is {}, expected i64 (ONNX defines it as int64)", dtype_name(t.dtype())));
    }
    if (static_cast<size_t>(t.numel()) != expect) {
      return c.invalid(fmt::format("sizes has {} values, expected {}", t.numel(), expect));
    }
    const Shape& in = c.input(0)->shape;
    a.sizes = expand(t.to_int64s(), [&](size_t i) { return in[i]; });
    if (std::any_of(a.sizes.begin(), a.sizes.end(), [](int64_t s) { return s < 0; })) {
      return c.unsupported_attr("sizes on axes of dynamic size that are not resized");
    }
  } else if (c.input(3)) {
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(3, "sizes"));
    if (t.numel() > 0) return c.invalid("gives both scales and sizes");
  }
  return c.emit(OpKind::kResize, {c.input(0)}, a).status();
}

}  // namespace steadyocr::graph::onnx_detail
