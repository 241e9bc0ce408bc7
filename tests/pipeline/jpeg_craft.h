// Crafted JPEG files for the decode-limit tests, written with libjpeg's compressor: progressive files with a scan
// script of many valid scans (one AC coefficient per scan, refined bit by bit), and files whose last scan is repeated
// thousands of times (as the 16,002-scan file of issue 15).
#pragma once

#include <cstdio>  // jpeglib.h needs FILE
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <jpeglib.h>

namespace steadyocr::testing {

// A grey gradient, width x height, encoded with libjpeg. `script`: scans (empty: baseline).
inline std::vector<uint8_t> encode_grey_jpeg(int width, int height, const std::vector<jpeg_scan_info>& script) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);  // errors abort the test program (exit), which fails the test
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  jpeg_mem_dest(&c, &out, &out_size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (!script.empty()) {
    c.scan_info = script.data();
    c.num_scans = static_cast<int>(script.size());
  }
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(width));
  while (c.next_scanline < c.image_height) {
    for (int x = 0; x < width; ++x) row[static_cast<size_t>(x)] = static_cast<uint8_t>((x + c.next_scanline) & 0xff);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> bytes(out, out + out_size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

// A valid progressive script of one grey component with 1 + 63 * (1 + al) scans (al <= 10 for 8-bit samples): the DC
// scan, then every AC coefficient alone, first at successive approximation `al`, then refined one bit per scan down to
// 0.
inline std::vector<jpeg_scan_info> many_scans_script(int al) {
  std::vector<jpeg_scan_info> s;
  auto scan = [&](int ss, int se, int ah, int a) {
    jpeg_scan_info i{};
    i.comps_in_scan = 1;
    i.component_index[0] = 0;
    i.Ss = ss;
    i.Se = se;
    i.Ah = ah;
    i.Al = a;
    s.push_back(i);
  };
  scan(0, 0, 0, 0);
  for (int k = 1; k < 64; ++k) {
    scan(k, k, 0, al);
    for (int a = al; a > 0; --a) scan(k, k, a, a - 1);
  }
  return s;
}

// The same file with its last scan (SOS header and entropy-coded data) repeated until it has `scans` scans; libjpeg
// reads the repeats as an odd but acceptable progression (a warning), so only a scan limit stops it.
inline std::vector<uint8_t> repeat_last_scan(const std::vector<uint8_t>& jpeg, int scans) {
  // The last SOS marker: in entropy-coded data 0xFF is followed by 0x00 or a restart marker, so FF DA is a marker.
  size_t last_sos = 0, eoi = 0;
  int found = 0;
  for (size_t i = 2; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] != 0xFF) continue;
    if (jpeg[i + 1] == 0xDA) {
      last_sos = i;
      ++found;
    }
    if (jpeg[i + 1] == 0xD9) eoi = i;
  }
  if (found == 0 || eoi <= last_sos) throw std::runtime_error("not a JPEG with scans");
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(eoi));
  for (int i = found; i < scans; ++i) {
    out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(last_sos),
               jpeg.begin() + static_cast<std::ptrdiff_t>(eoi));
  }
  out.push_back(0xFF);
  out.push_back(0xD9);
  return out;
}

}  // namespace steadyocr::testing
