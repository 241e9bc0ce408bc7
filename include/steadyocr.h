/* steadyocr's C API: libsteadyocr.so (C++ inside, C ABI outside). docs/PYTHON.md ("The C API") describes it.
 *
 *   steadyocr_options* o = steadyocr_options_new();
 *   steadyocr_options_set_string(o, "models", "models");
 *   steadyocr_error* err = NULL;
 *   steadyocr_engine* e = steadyocr_create(o, &err);        NULL on failure: err says why (code, message, fix)
 *   steadyocr_result* r = steadyocr_read_file(e, "page.jpg", &err);
 *   for (size_t i = 0; i < steadyocr_result_line_count(r); ++i) puts(steadyocr_result_line_text(r, i));
 *   steadyocr_result_free(r); steadyocr_destroy(e); steadyocr_options_free(o);
 *
 * Strings are UTF-8 and owned by the object they come from (valid until it is freed). One engine may be used from
 * many threads at once; results, options and errors belong to one thread at a time. */
#ifndef STEADYOCR_H_
#define STEADYOCR_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STEADYOCR_EXPORT __attribute__((visibility("default")))
#else
#define STEADYOCR_EXPORT
#endif

/* The version of this header's API. A program built against version N runs with a library whose
 * steadyocr_api_version() is N; functions are only ever added, under a higher version. */
#define STEADYOCR_API_VERSION 1

STEADYOCR_EXPORT int steadyocr_api_version(void);
/* The library's release ("0.1.0"). */
STEADYOCR_EXPORT const char* steadyocr_version(void);

/* What went wrong, by what the caller can do about it. */
typedef enum steadyocr_status {
  STEADYOCR_OK = 0,
  STEADYOCR_ERROR = 1,               /* anything else: a device lost with no backend left, a bug */
  STEADYOCR_INVALID_OPTION = 2,      /* an unknown option, or a value out of range or of the wrong type */
  STEADYOCR_BACKEND_UNAVAILABLE = 3, /* no backend can serve (require_gpu without a usable GPU) */
  STEADYOCR_MODEL_ERROR = 4,         /* model files missing or unreadable */
  STEADYOCR_IMAGE_ERROR = 5          /* the input cannot be read: missing file, damaged data, over the limits */
} steadyocr_status;

/* An error: filled through a `steadyocr_error** error` argument (when not NULL; *error must be NULL on entry), freed
 * with steadyocr_error_free. */
typedef struct steadyocr_error steadyocr_error;
STEADYOCR_EXPORT steadyocr_status steadyocr_error_status(const steadyocr_error* error);
/* The finding's code (L1_NO_DRIVER, LOAD_FAILED, ...; docs/DOCTOR.md), else the status code's name (DATA_LOSS, ...). */
STEADYOCR_EXPORT const char* steadyocr_error_code(const steadyocr_error* error);
STEADYOCR_EXPORT const char* steadyocr_error_message(const steadyocr_error* error);
/* What the caller can do ("" when nothing specific is known). */
STEADYOCR_EXPORT const char* steadyocr_error_fix(const steadyocr_error* error);
/* STEADYOCR_IMAGE_ERROR: the input (its path, or "bytes"); "" otherwise. */
STEADYOCR_EXPORT const char* steadyocr_error_input(const steadyocr_error* error);
STEADYOCR_EXPORT void steadyocr_error_free(steadyocr_error* error);

/* Engine options: the engine flags of `steadyocr ocr --help` with '_' for '-' (models, backend, require_gpu, cls,
 * det_only, rec_only, threads, drop_score, det_limit_side, ...), plus worker_exe (the steadyocr binary serving GPU
 * worker rungs). Checked when the engine is created, as the CLI checks its flags. */
typedef struct steadyocr_options steadyocr_options;
STEADYOCR_EXPORT steadyocr_options* steadyocr_options_new(void);
STEADYOCR_EXPORT void steadyocr_options_free(steadyocr_options* options);
STEADYOCR_EXPORT void steadyocr_options_set_string(steadyocr_options* options, const char* key, const char* value);
STEADYOCR_EXPORT void steadyocr_options_set_int(steadyocr_options* options, const char* key, int64_t value);
STEADYOCR_EXPORT void steadyocr_options_set_double(steadyocr_options* options, const char* key, double value);
STEADYOCR_EXPORT void steadyocr_options_set_bool(steadyocr_options* options, const char* key, int value);

typedef struct steadyocr_engine steadyocr_engine;
/* Builds the engine: the fallback ladder cuda-fp32 > cuda-fp16 > cpu > reference (or the backend pinned), models
 * loaded and self-tested. NULL on failure. `options` may be NULL (all defaults) and may be freed afterwards. */
STEADYOCR_EXPORT steadyocr_engine* steadyocr_create(const steadyocr_options* options, steadyocr_error** error);
/* The same from a JSON object of options, e.g. {"models": "models", "backend": "cpu", "drop_score": 0.6}. */
STEADYOCR_EXPORT steadyocr_engine* steadyocr_create_json(const char* options_json, steadyocr_error** error);
STEADYOCR_EXPORT void steadyocr_destroy(steadyocr_engine* engine);
/* {"version", "rung", "backend", "events": [...], "workers": {...}} as JSON; free with steadyocr_string_free. */
STEADYOCR_EXPORT char* steadyocr_info_json(const steadyocr_engine* engine);
STEADYOCR_EXPORT void steadyocr_string_free(char* s);

typedef struct steadyocr_result steadyocr_result;
/* Reads one encoded image (JPEG, PNG, BMP, WebP, TIFF) held in memory, or a file. NULL on failure. Thread-safe. */
STEADYOCR_EXPORT steadyocr_result* steadyocr_read(steadyocr_engine* engine, const uint8_t* data, size_t size,
                                                  steadyocr_error** error);
STEADYOCR_EXPORT steadyocr_result* steadyocr_read_file(steadyocr_engine* engine, const char* path,
                                                       steadyocr_error** error);
STEADYOCR_EXPORT void steadyocr_result_free(steadyocr_result* result);

/* The text lines in reading order. `index` < steadyocr_result_line_count(). */
STEADYOCR_EXPORT size_t steadyocr_result_line_count(const steadyocr_result* result);
STEADYOCR_EXPORT const char* steadyocr_result_line_text(const steadyocr_result* result, size_t index);
STEADYOCR_EXPORT float steadyocr_result_line_score(const steadyocr_result* result, size_t index);
/* The line's box in the picture's pixels: x0 y0 (top left) x1 y1 (top right) x2 y2 (bottom right) x3 y3. */
STEADYOCR_EXPORT void steadyocr_result_line_box(const steadyocr_result* result, size_t index, float box[8]);
/* Every line's text, joined by '\n'. */
STEADYOCR_EXPORT const char* steadyocr_result_text(const steadyocr_result* result);
/* The backend the models ran on ("cpu", "cuda-fp16", ...) and the rung of the ladder that read it. */
STEADYOCR_EXPORT const char* steadyocr_result_backend(const steadyocr_result* result);
STEADYOCR_EXPORT const char* steadyocr_result_rung(const steadyocr_result* result);
/* The image's object of `steadyocr ocr --format json` (lines, backend, rung, fallbacks, timings_ms, ...). */
STEADYOCR_EXPORT const char* steadyocr_result_json(const steadyocr_result* result);

#ifdef __cplusplus
}
#endif

#endif /* STEADYOCR_H_ */
