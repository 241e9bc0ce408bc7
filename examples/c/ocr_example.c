/* Reads images with libsteadyocr.so (include/steadyocr.h) and prints each text line with its score and box, then the
 * image's JSON (as `steadyocr ocr --format json` writes it).
 *
 *   build/examples/ocr_example [--OPTION VALUE]... IMAGE...
 *
 * OPTION is an engine option (models, backend, drop_score, ...; VALUE true or false for flags such as require_gpu).
 *
 * Exit status 0 when every image was read, 1 when one could not be, 2 when the engine could not be built. */
#include <stdio.h>
#include <string.h>

#include "steadyocr.h"

static void print_error(const char* what, steadyocr_error* err) {
  fprintf(stderr, "%s: %s (status %d, code %s)\n", what, steadyocr_error_message(err), (int)steadyocr_error_status(err),
          steadyocr_error_code(err));
  if (steadyocr_error_fix(err)[0]) fprintf(stderr, "  fix: %s\n", steadyocr_error_fix(err));
  steadyocr_error_free(err);
}

int main(int argc, char** argv) {
  if (steadyocr_api_version() != STEADYOCR_API_VERSION) {
    fprintf(stderr, "libsteadyocr API version %d, this program was built for %d\n", steadyocr_api_version(),
            STEADYOCR_API_VERSION);
    return 2;
  }
  steadyocr_options* options = steadyocr_options_new();
  int first_image = 1;
  while (first_image + 1 < argc && strncmp(argv[first_image], "--", 2) == 0) {
    const char* key = argv[first_image] + 2;
    const char* value = argv[first_image + 1];
    if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0) {
      steadyocr_options_set_bool(options, key, strcmp(value, "true") == 0); /* a flag: --require_gpu true */
    } else {
      steadyocr_options_set_string(options, key, value);
    }
    first_image += 2;
  }
  if (first_image >= argc) {
    fprintf(stderr, "usage: %s [--models DIR] [--backend NAME] IMAGE...\n", argv[0]);
    steadyocr_options_free(options);
    return 2;
  }

  steadyocr_error* err = NULL;
  steadyocr_engine* engine = steadyocr_create(options, &err);
  steadyocr_options_free(options);
  if (!engine) {
    print_error("cannot create the engine", err);
    return 2;
  }
  printf("steadyocr %s (C API %d)\n", steadyocr_version(), steadyocr_api_version());

  int failed = 0;
  for (int i = first_image; i < argc; ++i) {
    steadyocr_result* result = steadyocr_read_file(engine, argv[i], &err);
    if (!result) {
      print_error("cannot read", err);
      err = NULL;
      failed = 1;
      continue;
    }
    printf("== %s: %zu lines (backend %s, rung %s)\n", argv[i], steadyocr_result_line_count(result),
           steadyocr_result_backend(result), steadyocr_result_rung(result));
    for (size_t k = 0; k < steadyocr_result_line_count(result); ++k) {
      float box[8];
      steadyocr_result_line_box(result, k, box);
      printf("%.4f\t[%g,%g %g,%g %g,%g %g,%g]\t%s\n", steadyocr_result_line_score(result, k), box[0], box[1], box[2],
             box[3], box[4], box[5], box[6], box[7], steadyocr_result_line_text(result, k));
    }
    printf("%s\n", steadyocr_result_json(result));
    steadyocr_result_free(result);
  }
  steadyocr_destroy(engine);
  return failed;
}
