// steadyocr._native: the engine for Python (pybind11). The package python/steadyocr/ wraps it: OCR, Result, Line,
// the exceptions (steadyocr._errors) and doctor(). The GIL is released while files are read, arrays encoded, images
// read and visualisations drawn; one engine serves many threads at once (OcrEngine is thread-safe).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <opencv2/imgproc.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings/common/session.h"
#include "doctor/doctor.h"
#include "engine/result_format.h"
#include "pipeline/image_decode.h"

namespace py = pybind11;

namespace steadyocr::bindings {
namespace {

// Raises the exception of the error's kind: TypeError (an unknown option), ValueError (a bad value), else the class
// of that name in steadyocr._errors, carrying .code, .fix and .input.
[[noreturn]] void raise(const Error& e) {
  if (e.kind == ErrorKind::kUnknownOption) throw py::type_error(e.message);
  if (e.kind == ErrorKind::kInvalidOption) throw py::value_error(e.message);
  py::object cls = py::module_::import("steadyocr._errors").attr(error_kind_name(e.kind));
  py::object exc = cls(e.message, py::arg("code") = e.code, py::arg("fix") = e.fix, py::arg("input") = e.input);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

// One read image: the outcome and the encoded picture it was read from (for draw()).
struct Outcome {
  Read read;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  pipeline::DecodeLimits limits;
};

// An input as the package hands it over: kind "path" (str), "bytes" (bytes) or "array" (a C-contiguous uint8 array,
// HxW, HxWx3 or HxWx4, BGR(A) unless rgb).
struct Input {
  std::string kind;
  std::string path;
  std::string bytes;
  py::array array;
  const uint8_t* pixels = nullptr;
  std::vector<py::ssize_t> shape;
};

class Engine {
 public:
  explicit Engine(const std::string& options_json) {
    nlohmann::json options = nlohmann::json::parse(options_json, nullptr, false);
    Error error;
    {
      py::gil_scoped_release release;
      session_ = Session::create(options, &error);
    }
    if (!session_) raise(error);
  }

  // Reads the inputs; raises for the first that fails (naming it by `labels`, a path or "#N").
  std::vector<std::shared_ptr<Outcome>> read(const py::list& items, const std::vector<std::string>& names,
                                             const std::vector<std::string>& labels, bool rgb) {
    std::vector<Input> inputs(items.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto t = items[i].cast<py::tuple>();
      Input& in = inputs[i];
      in.kind = t[0].cast<std::string>();
      if (in.kind == "path") {
        in.path = t[1].cast<std::string>();
      } else if (in.kind == "bytes") {
        in.bytes = t[1].cast<std::string>();  // one copy, made under the GIL
      } else {
        in.array = t[1].cast<py::array>();
        in.pixels = static_cast<const uint8_t*>(in.array.data());
        in.shape.assign(in.array.shape(), in.array.shape() + in.array.ndim());
      }
    }
    std::vector<std::shared_ptr<Outcome>> out(inputs.size());
    std::optional<Error> first;
    {
      py::gil_scoped_release release;
      std::vector<engine::ImageJob> jobs;
      std::vector<std::string> job_labels;
      const pipeline::DecodeLimits& limits = session_->options().limits;
      // Inputs are prepared in order up to the first that cannot be (a missing file, an array that cannot be
      // encoded); the engine reads those before it, so that the error raised is the first input's that failed.
      std::optional<Error> unprepared;
      for (size_t i = 0; i < inputs.size(); ++i) {
        Result<std::vector<uint8_t>> bytes = to_bytes(inputs[i], rgb, limits);
        if (!bytes.is_ok()) {
          unprepared = error_from_status(bytes.status(), ErrorKind::kImage, labels[i]);
          unprepared->message = labels[i] + ": " + bytes.status().message();
          break;
        }
        engine::ImageJob job;
        job.name = names[i];
        job.bytes = std::move(*bytes);
        jobs.push_back(std::move(job));
        job_labels.push_back(labels[i]);
      }
      std::vector<Read> reads = session_->read(jobs, job_labels);
      for (size_t k = 0; k < reads.size(); ++k) {
        if (reads[k].error && !first) first = reads[k].error;
        auto source = std::make_shared<const std::vector<uint8_t>>(std::move(jobs[k].bytes));
        out[k] = std::make_shared<Outcome>(Outcome{std::move(reads[k]), std::move(source), limits});
      }
      if (!first) first = unprepared;
    }
    if (first) raise(*first);
    return out;
  }

  std::string info() const { return session_->info().dump(); }

 private:
  static Result<std::vector<uint8_t>> to_bytes(const Input& in, bool rgb, const pipeline::DecodeLimits& limits) {
    if (in.kind == "path") return pipeline::read_file_bytes(in.path, limits.max_file_bytes);
    if (in.kind == "bytes") return std::vector<uint8_t>(in.bytes.begin(), in.bytes.end());
    const int channels = in.shape.size() == 2 ? 1 : static_cast<int>(in.shape[2]);
    cv::Mat picture(static_cast<int>(in.shape[0]), static_cast<int>(in.shape[1]), CV_8UC(channels),
                    const_cast<uint8_t*>(in.pixels));
    if (rgb && channels >= 3) {
      cv::Mat bgr;
      cv::cvtColor(picture, bgr, channels == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGRA);
      return encode_pixels(bgr);
    }
    return encode_pixels(picture);
  }

  std::unique_ptr<Session> session_;
};

py::list lines_of(const Outcome& o) {
  py::list lines;
  for (const auto& l : o.read.outcome.result.lines) {
    py::array_t<float> box({4, 2});
    auto b = box.mutable_unchecked<2>();
    for (int k = 0; k < 4; ++k) {
      b(k, 0) = l.box[k].x;
      b(k, 1) = l.box[k].y;
    }
    lines.append(py::make_tuple(l.text, l.score, box));
  }
  return lines;
}

py::array draw_of(const Outcome& o) {
  Result<cv::Mat> picture = Status(StatusCode::kInternal, "not drawn");
  {
    py::gil_scoped_release release;
    picture = draw(*o.bytes, o.read.outcome.result.lines, o.limits);
  }
  if (!picture.is_ok()) raise(error_from_status(picture.status(), ErrorKind::kImage, o.read.outcome.path));
  const cv::Mat& m = *picture;
  py::array_t<uint8_t> out({m.rows, m.cols, 3});
  for (int y = 0; y < m.rows; ++y) {
    std::memcpy(out.mutable_data(y, 0, 0), m.ptr(y), static_cast<size_t>(m.cols) * 3);
  }
  return out;
}

std::string doctor_report(int level, const std::string& models) {
  std::string json;
  {
    py::gil_scoped_release release;
    point_at_cuda_plugin();
    doctor::DoctorOptions o;
    o.level = level;
    o.device.models_dir = models;
    o.device.executable = steadyocr_executable();
    json = doctor::report_to_json(doctor::run_doctor(o)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return json;
}

}  // namespace
}  // namespace steadyocr::bindings

PYBIND11_MODULE(_native, m) {
  using namespace steadyocr::bindings;
  m.doc() = "steadyocr's engine (use the steadyocr package, not this module)";
  m.attr("version") = STEADYOCR_VERSION;
  m.attr("steadyocr_executable") = steadyocr_executable();
  py::class_<Outcome, std::shared_ptr<Outcome>>(m, "Outcome")
      .def("json",
           [](const Outcome& o) {
             return steadyocr::engine::outcome_to_json(o.read.outcome)
                 .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
           })
      .def("lines", &lines_of)
      .def("draw", &draw_of)
      .def_property_readonly("name", [](const Outcome& o) { return o.read.outcome.name; });
  py::class_<Engine>(m, "Engine")
      .def(py::init<const std::string&>(), py::arg("options_json"))
      .def("read", &Engine::read, py::arg("items"), py::arg("names"), py::arg("labels"), py::arg("rgb"))
      .def("info", &Engine::info);
  m.def("doctor_report", &doctor_report, py::arg("level"), py::arg("models"));
}
