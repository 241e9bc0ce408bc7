// Options that shape GPU throughput: recognition width buckets, padded batches, detector input buckets, the device
// execution profile (pictures in parallel, generic passes) and the shapes planned at load. The ones that must not
// change results are checked against the plain pipeline on the real models.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <thread>

#include "core/host_memory.h"
#include "core/parallel.h"
#include "pipeline/det_preprocess.h"
#include "pipeline/handler.h"
#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "pipeline/recognizer.h"
#include "pipeline/warm_up.h"
#include "runtime/backend_registry.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

TEST(RecBatchWidth, BucketsRoundUpAboveTheMinimumOnly) {
  RecOptions o;  // height 48, min_width 320
  EXPECT_EQ(rec_batch_width(2.0, o), 320);
  EXPECT_EQ(rec_batch_width(7.0, o), 336);  // exact: int(48 * 7)
  o.width_bucket = 64;
  EXPECT_EQ(rec_batch_width(2.0, o), 320);
  EXPECT_EQ(rec_batch_width(320.0 / 48, o), 320);
  EXPECT_EQ(rec_batch_width(7.0, o), 384);
  EXPECT_EQ(rec_batch_width(1000.0 / 48, o), 1024);
}

TEST(DetPreprocess, PaddingKeepsThePictureTopLeftAndZerosElsewhere) {
  cv::Mat img(100, 70, CV_8UC3);
  cv::randu(img, 0, 255);
  DetInput plain = det_preprocess(img, 960);
  DetInput padded = det_preprocess(img, 960, 64);
  ASSERT_EQ(plain.resized_h, 96);
  ASSERT_EQ(plain.resized_w, 64);
  EXPECT_EQ(plain.input_h, 96);
  EXPECT_EQ(padded.resized_h, 96);
  EXPECT_EQ(padded.input_h, 128);
  EXPECT_EQ(padded.input_w, 64);
  ASSERT_EQ(padded.tensor.shape(), (Shape{1, 3, 128, 64}));
  const float* a = plain.tensor.data<float>();
  const float* b = padded.tensor.data<float>();
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 128; ++y) {
      for (int x = 0; x < 64; ++x) {
        float got = b[(c * 128 + y) * 64 + x];
        if (y < 96) {
          ASSERT_EQ(got, a[(c * 96 + y) * 64 + x]) << c << "," << y << "," << x;
        } else {
          ASSERT_EQ(got, 0.f) << c << "," << y << "," << x;
        }
      }
    }
  }
}

TEST(WarmShapes, BucketsUpToTheLimitInBothOrientations) {
  PipelineOptions o;
  EXPECT_TRUE(det_warm_shapes(o).empty());
  EXPECT_TRUE(rec_warm_shapes(o).empty());
  o.det_bucket = 320;
  auto det = det_warm_shapes(o);
  ASSERT_EQ(det.size(), 5u);
  EXPECT_EQ(det[0], (Shape{1, 3, 960, 320}));
  EXPECT_EQ(det[1], (Shape{1, 3, 320, 960}));
  EXPECT_EQ(det[4], (Shape{1, 3, 960, 960}));
  o.rec.width_bucket = 160;
  o.warm_rec_max_width = 800;
  auto rec = rec_warm_shapes(o);
  ASSERT_EQ(rec.size(), 4u);  // 320 480 640 800
  EXPECT_EQ(rec.back(), (Shape{6, 3, 48, 800}));
}

TEST(WarmShapes, MergedShortLinesAtTheMinimumWidth) {
  PipelineOptions o;
  o.rec.merge_rows = 24;
  EXPECT_TRUE(rec_warm_shapes(o).empty());  // merging needs padded batches
  o.rec.pad_rows = 6;
  auto rec = rec_warm_shapes(o);
  ASSERT_EQ(rec.size(), 4u);  // 6, 12, 18, 24 rows at 320
  EXPECT_EQ(rec.front(), (Shape{6, 3, 48, 320}));
  EXPECT_EQ(rec.back(), (Shape{24, 3, 48, 320}));
}

std::string docs_dir() {
  return testing::source_dir() + "/tests/data/ocr/docs";
}

// The two committed documents these tests read, each `copies` times in a row (empty when one does not load).
std::vector<cv::Mat> two_pages(int copies = 1) {
  std::vector<cv::Mat> pages;
  for (const char* name : {"s31_doc_0000.jpg", "s32r4_doc_0002.jpg"}) {
    auto img = load_image(docs_dir() + "/" + name);
    EXPECT_TRUE(img.is_ok()) << img.status().to_string();
    if (!img.is_ok()) return {};
    for (int i = 0; i < copies; ++i) pages.push_back(img->bgr);
  }
  return pages;
}

// The device profile (pictures in parallel, merged recognition batches, generic passes) on the CPU backend reads the
// committed documents exactly as the host profile does: it changes where work runs, never the result. So do its
// recognition calls with their rows padded to a multiple of 6 (the default before 2026-12-06: blank rows change
// nothing but the work), and by default it pads none.
TEST(ExecutionProfile, DeviceProfileReadsLikeTheHostProfile) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend(runtime::available_backends().front());
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  const std::vector<cv::Mat> pages = two_pages();
  ASSERT_EQ(pages.size(), 2u);
  std::vector<std::vector<std::string>> seen;
  for (int pad : {-1, -1, 6}) {
    PipelineOptions o;
    o.execution = seen.empty() ? ExecutionProfile::kHost : ExecutionProfile::kDevice;
    o.rec.pad_rows = pad;
    auto p = Pipeline::load(model_paths_in(testing::models_dir()), *backend, o);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ((*p)->options().rec.pad_rows, pad < 0 && !seen.empty() ? 0 : pad) << seen.size();
    auto results = (*p)->run_many(pages);
    std::vector<std::string> lines;
    for (auto& r : results) {
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      for (auto& l : r->lines) {
        lines.push_back(
            fmt::format("{} {:.0f},{:.0f} {:.0f},{:.0f}", l.text, l.box[0].x, l.box[0].y, l.box[2].x, l.box[2].y));
      }
    }
    EXPECT_GT(lines.size(), 10u);
    seen.push_back(lines);
  }
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(seen[0], seen[2]);
}

TEST(HostGroups, ResolvedForTheCpuBackendOnly) {
  PipelineOptions o;  // kAuto, host_groups 0
  EXPECT_EQ(host_groups_for(o, "cpu", 2), 1);
  EXPECT_EQ(host_groups_for(o, "cpu", 4), 1);
  EXPECT_EQ(host_groups_for(o, "cpu", 8), 8);  // one picture per thread
  EXPECT_EQ(host_groups_for(o, "cpu", 16), 16);
  EXPECT_EQ(host_groups_for(o, "cpu", 64), 16);  // at most 16 (each group's plan instances hold activations)
  // At most one per 256 MiB of memory available (a container's limit included), at least one.
  EXPECT_EQ(host_groups_for(o, "cpu", 16, int64_t{8} << 30), 16);
  EXPECT_EQ(host_groups_for(o, "cpu", 16, int64_t{1} << 30), 4);
  EXPECT_EQ(host_groups_for(o, "cpu", 16, int64_t{100} << 20), 1);
  EXPECT_EQ(host_groups_for(o, "cpu", 4, int64_t{1} << 30), 1);
  EXPECT_EQ(host_groups_for(o, "cuda-fp16", 16), 1);  // the device's runs are not on the host's cores
  EXPECT_EQ(host_groups_for(o, "vulkan", 16), 1);
  EXPECT_EQ(host_groups_for(o, "reference", 16), 1);
  o.host_groups = 3;
  EXPECT_EQ(host_groups_for(o, "cpu", 16), 3);
  EXPECT_EQ(host_groups_for(o, "cpu", 16, int64_t{256} << 20), 3);  // the user's count stands
  EXPECT_EQ(host_groups_for(o, "cpu", 2), 2);                       // never more groups than threads
  EXPECT_EQ(host_groups_for(o, "cuda-fp32", 16), 1);
  o.execution = ExecutionProfile::kDevice;
  EXPECT_EQ(host_groups_for(o, "cpu", 16), 1);
}

// The automatic count is worked out once and written into the options (the engine does it at its start): later
// readers get that number, whatever the memory available by then; a count that is set stays.
TEST(HostGroups, ResolvedOnceIntoTheOptions) {
  const int threads_before = num_threads();
  set_num_threads(2);
  PipelineOptions few;
  resolve_host_groups(few);
  EXPECT_EQ(few.host_groups, 1) << "below 8 threads one group";
  set_num_threads(16);
  PipelineOptions many;
  const int64_t memory_before = host_memory::available_bytes();
  resolve_host_groups(many);
  const int64_t memory_after = host_memory::available_bytes();
  // The count for the memory read in between (either reading's count, should it cross a 256 MiB step meanwhile).
  const int a = host_groups_for(PipelineOptions{}, "cpu", 16, memory_before);
  const int b = host_groups_for(PipelineOptions{}, "cpu", 16, memory_after);
  EXPECT_GE(many.host_groups, std::min(a, b));
  EXPECT_LE(many.host_groups, std::max(a, b));
  EXPECT_GE(many.host_groups, 1);
  EXPECT_LE(many.host_groups, 16);
  // Read back through the functions every other part calls: the same number, for the cpu backend only.
  EXPECT_EQ(host_groups_here(many, "cpu"), many.host_groups);
  EXPECT_EQ(host_groups_for(many, "cuda-fp16", 16), 1);
  PipelineOptions set;
  set.host_groups = 3;
  resolve_host_groups(set);
  EXPECT_EQ(set.host_groups, 3);
  PipelineOptions too_many;  // a count set above the threads: what runs, the threads' number
  too_many.host_groups = 32;
  resolve_host_groups(too_many);
  EXPECT_EQ(too_many.host_groups, 16);
  PipelineOptions device;
  device.execution = ExecutionProfile::kDevice;
  resolve_host_groups(device);
  EXPECT_EQ(device.host_groups, 1);
  set_num_threads(threads_before);
}

// Pictures read side by side in groups (each on its share of the threads, with its own plan instances) read as the
// pictures of one group do.
TEST(HostGroups, PicturesSideBySideReadAsInOneGroup) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("cpu");
  if (!backend.is_ok()) GTEST_SKIP() << "the cpu backend is not in this build";
  const std::vector<cv::Mat> pages = two_pages(2);
  ASSERT_EQ(pages.size(), 4u);
  const int saved = num_threads();
  set_num_threads(2);
  std::vector<std::vector<std::string>> seen;
  for (int groups : {1, 2}) {
    PipelineOptions o;
    o.host_groups = groups;
    auto p = Pipeline::load(model_paths_in(testing::models_dir()), *backend, o);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ((*p)->options().host_groups, groups);
    auto results = (*p)->run_many(pages);
    std::vector<std::string> lines;
    for (auto& r : results) {
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      for (auto& l : r->lines) {
        lines.push_back(fmt::format("{} {:.0f},{:.0f} {:.0f},{:.0f} {:.4f}", l.text, l.box[0].x, l.box[0].y, l.box[2].x,
                                    l.box[2].y, l.score));
      }
    }
    EXPECT_GT(lines.size(), 20u);
    seen.push_back(lines);
  }
  set_num_threads(saved);
  EXPECT_EQ(seen[0], seen[1]);
}

// With buckets, warm-up plans every bucket shape with the requested instances, and the pipeline then reads without
// planning anything new for pages that fit the buckets.
TEST(WarmUp, PlansEveryBucketWithItsInstances) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend(runtime::available_backends().front());
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  runtime::ModelOptions mo;
  mo.max_replicas = 2;
  ModelPaths paths = model_paths_in(testing::models_dir());
  auto det = runtime::Model::load(paths.det, *backend, mo);
  auto rec = runtime::Model::load(paths.rec, *backend, mo);
  ASSERT_TRUE(det.is_ok() && rec.is_ok());
  PipelineOptions o;
  o.det_limit_side = 128;
  o.det_bucket = 64;  // det shapes 128x64, 64x128, 128x128
  o.rec.width_bucket = 160;
  o.warm_rec_max_width = 480;  // rec widths 320, 480
  o.rec.batch = 2;
  o.plan_instances = 2;
  ASSERT_TRUE(warm_up_models(det->get(), rec->get(), o).is_ok());
  EXPECT_EQ((*det)->stats().plans_built, 3u);
  EXPECT_EQ((*det)->stats().replicas_built, 3u);
  EXPECT_EQ((*rec)->stats().plans_built, 2u);
  EXPECT_EQ((*rec)->stats().replicas_built, 2u);
  EXPECT_EQ((*det)->stats().runs, 0u);  // warm-up runs are not requests
}

}  // namespace
}  // namespace steadyocr::pipeline

namespace steadyocr::pipeline {
namespace {

// One 32-pixel-high crop per word, dark text on light, as wide as its text.
std::vector<cv::Mat> text_crops(const std::vector<std::string>& words) {
  std::vector<cv::Mat> crops;
  for (const std::string& w : words) {
    cv::Mat m(32, 14 + 19 * static_cast<int>(w.size()), CV_8UC3, cv::Scalar(250, 250, 250));
    cv::putText(m, w, {4, 24}, cv::FONT_HERSHEY_SIMPLEX, 0.8, cv::Scalar(10, 10, 10), 2, cv::LINE_AA);
    crops.push_back(m);
  }
  return crops;
}

// Merging same-width batches (the device profile) changes the number of model calls, never a line's input row.
TEST(RecMerge, SameTextsAsPaddleOcrBatches) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("cpu");
  if (!backend.is_ok()) GTEST_SKIP() << "the cpu backend is not in this build";
  auto model = runtime::Model::load(testing::models_dir() + "/ch_PP-OCRv4_rec_infer.onnx", *backend);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto dict = Dictionary::load(testing::models_dir() + "/ppocr_keys_v1.txt");
  ASSERT_TRUE(dict.is_ok());
  const std::vector<cv::Mat> crops = text_crops({"17", "OCR", "2026", "tax", "TOTAL 12.50", "cash", "x9", "item", "ok",
                                                 "A B C", "0.5", "receipt no 42", "hello", "q"});
  RecOptions plain;
  RecOptions merged;
  merged.pad_rows = 6;
  merged.merge_rows = 12;
  std::shared_ptr<runtime::Model> shared = std::move(model).value();
  Recognizer a(shared, *dict, plain), b(shared, *dict, merged);
  auto ra = a.recognize(crops);
  const uint64_t plain_calls = shared->stats().runs;
  auto rb = b.recognize(crops);
  const uint64_t merged_calls = shared->stats().runs - plain_calls;
  ASSERT_TRUE(ra.is_ok() && rb.is_ok());
  ASSERT_EQ(ra->size(), crops.size());
  int nonempty = 0;
  for (size_t i = 0; i < crops.size(); ++i) {
    EXPECT_EQ((*ra)[i].text, (*rb)[i].text) << i;
    EXPECT_NEAR((*ra)[i].score, (*rb)[i].score, 1e-4) << i;
    nonempty += !(*ra)[i].text.empty();
  }
  EXPECT_GE(nonempty, 10);               // the crops are readable: the comparison is about real text
  EXPECT_EQ(plain_calls, 3u);            // 6 + 6 + 2 crops
  EXPECT_LT(merged_calls, plain_calls);  // the first two batches are both 320 wide
}

// OpenCV's own loops: off (1) where a worker reads one image per thread, every thread otherwise; a value the user set
// in OPENCV_FOR_THREADS_NUM is left alone.
TEST(ImageThreads, SetUnlessTheUserChose) {
  if (std::getenv("OPENCV_FOR_THREADS_NUM")) GTEST_SKIP() << "OPENCV_FOR_THREADS_NUM is set: OpenCV keeps it";
  const int before = cv::getNumThreads();
  EXPECT_EQ(set_image_threads(1), 1);
  EXPECT_EQ(cv::getNumThreads(), 1);
  EXPECT_EQ(set_image_threads(2), 2);
  set_image_threads(before);
}

// Counts the calls in flight at once (each held a little, so that calls started together overlap).
class OverlapCounter : public runtime::Runner {
 public:
  explicit OverlapCounter(std::shared_ptr<runtime::Runner> inner) : inner_(std::move(inner)) {}
  Result<Tensor> run(const Tensor& input) override { return run_call(input, nullptr); }
  Result<Tensor> run_call(const Tensor& input, runtime::CallInfo* info) override {
    const int now = ++in_flight_;
    for (int seen = most_.load(); now > seen && !most_.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    auto r = inner_->run_call(input, info);
    --in_flight_;
    ++calls_;
    return r;
  }
  std::string backend_name() const override { return inner_->backend_name(); }
  int most() const { return most_; }
  int calls() const { return calls_; }

 private:
  std::shared_ptr<runtime::Runner> inner_;
  std::atomic<int> in_flight_{0}, most_{0}, calls_{0};
};

// The device profile sends an image's recognition calls at once: the texts, scores and calls are those of the calls
// one after another, and the calls did overlap. Inside a SerialScope (a worker's images each on their own thread)
// they go one after another.
TEST(RecConcurrentCalls, SameTextsAndTheCallsOverlap) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("cpu");
  if (!backend.is_ok()) GTEST_SKIP() << "the cpu backend is not in this build";
  auto model = runtime::Model::load(testing::models_dir() + "/ch_PP-OCRv4_rec_infer.onnx", *backend);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto dict = Dictionary::load(testing::models_dir() + "/ppocr_keys_v1.txt");
  ASSERT_TRUE(dict.is_ok());
  // Short words and long lines: batches of three widths, so three calls.
  const std::vector<cv::Mat> crops = text_crops({"17", "OCR", "2026", "tax", "TOTAL 12.50 EUR", "cash", "receipt 4",
                                                 "item twelve", "ok", "A B C D E", "the longest line of all", "q"});
  std::shared_ptr<runtime::Runner> shared = std::move(model).value();
  auto serial_counter = std::make_shared<OverlapCounter>(shared);
  auto conc_counter = std::make_shared<OverlapCounter>(shared);
  RecOptions serial;
  serial.batch = 4;
  RecOptions conc = serial;
  conc.concurrent_calls = true;
  Recognizer a(serial_counter, *dict, serial), b(conc_counter, *dict, conc);
  std::vector<runtime::CallInfo> calls_a, calls_b;
  ModelTimes times_a, times_b;
  auto ra = a.recognize(crops, &calls_a, std::nullopt, &times_a);
  auto rb = b.recognize(crops, &calls_b, std::nullopt, &times_b);
  ASSERT_TRUE(ra.is_ok() && rb.is_ok());
  ASSERT_EQ(rb->size(), crops.size());
  int nonempty = 0;
  for (size_t i = 0; i < crops.size(); ++i) {
    EXPECT_EQ((*ra)[i].text, (*rb)[i].text) << i;
    EXPECT_NEAR((*ra)[i].score, (*rb)[i].score, 1e-4) << i;
    nonempty += !(*ra)[i].text.empty();
  }
  EXPECT_GE(nonempty, 9);
  EXPECT_EQ(serial_counter->calls(), 3);
  EXPECT_EQ(conc_counter->calls(), 3);
  EXPECT_EQ(calls_b.size(), 3u);  // every call reported, as one after another
  EXPECT_EQ(times_b.calls, 3);
  EXPECT_EQ(serial_counter->most(), 1);
  EXPECT_GE(conc_counter->most(), 2);

  auto serial_scope_counter = std::make_shared<OverlapCounter>(shared);
  Recognizer c(serial_scope_counter, *dict, conc);
  {
    SerialScope scope;
    auto rc = c.recognize(crops);
    ASSERT_TRUE(rc.is_ok());
    for (size_t i = 0; i < crops.size(); ++i) EXPECT_EQ((*ra)[i].text, (*rc)[i].text) << i;
  }
  EXPECT_EQ(serial_scope_counter->most(), 1);
}

}  // namespace
}  // namespace steadyocr::pipeline

namespace steadyocr::pipeline {
namespace {

// Batching across callers: pictures read at once from several threads share model calls (stacked rows), and each
// gets the lines it gets alone.
TEST(BatchingAcrossCallers, EveryPictureReadsAsAlone) {
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("cpu");
  if (!backend.is_ok()) GTEST_SKIP() << "the cpu backend is not in this build";
  const std::vector<cv::Mat> pages = two_pages();
  ASSERT_EQ(pages.size(), 2u);
  PipelineOptions alone_options;
  alone_options.batching.enabled = false;
  auto alone = Pipeline::load(model_paths_in(testing::models_dir()), *backend, alone_options);
  ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
  std::vector<OcrResult> want;
  for (const cv::Mat& page : pages) {
    auto r = (*alone)->run(page);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->calls.det_images, 1);
    EXPECT_EQ(r->calls.rec_shared, 0);
    EXPECT_GE(r->lines.size(), 5u);
    want.push_back(std::move(r).value());
  }

  PipelineOptions options;  // batching on: one call per shape in flight on the host, the rest stacked
  auto batched = Pipeline::load(model_paths_in(testing::models_dir()), *backend, options);
  ASSERT_TRUE(batched.is_ok()) << batched.status().to_string();
  constexpr int kThreads = 6;
  std::vector<Result<OcrResult>> got(kThreads, Status(StatusCode::kInternal, "not run"));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      got[i] = (*batched)->run(pages[i % 2]);
    });
  }
  for (auto& t : threads) t.join();
  int shared_calls = 0;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(got[i].is_ok()) << got[i].status().to_string();
    const OcrResult& w = want[i % 2];
    ASSERT_EQ(got[i]->lines.size(), w.lines.size()) << i;
    for (size_t k = 0; k < w.lines.size(); ++k) {
      EXPECT_EQ(got[i]->lines[k].text, w.lines[k].text) << i << ":" << k;
      for (int p = 0; p < 4; ++p) {
        EXPECT_EQ(got[i]->lines[k].box[p], w.lines[k].box[p]) << i << ":" << k;
      }
      EXPECT_NEAR(got[i]->lines[k].score, w.lines[k].score, 1e-4) << i << ":" << k;
    }
    shared_calls += got[i]->calls.rec_shared + (got[i]->calls.det_images > 1);
  }
  EXPECT_GT(shared_calls, 0) << "six pictures at once on one slot per shape: some calls must have been stacked";
}

}  // namespace
}  // namespace steadyocr::pipeline
