// What the caches kept on disk between processes share: where they live, what identifies this build, and a write that
// concurrent processes never see half done. A cache entry's key includes build_identity(), so that a rebuilt binary
// (another pass, another kernel) never reads what an earlier build kept; their keys hash with core/content_hash.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace steadyocr {

// The cache directory from the environment: STEADYOCR_CACHE_DIR ("off" for none), else $XDG_CACHE_HOME/steadyocr,
// else $HOME/.cache/steadyocr; "" when none applies. The front door reads it once and hands it down in the options.
std::string cache_dir_from_environment();

// This build: the version and the GNU build IDs of the loaded steadyocr objects (the executable or Python module and
// its libso_* libraries), as 16 hex digits; objects linked without a build ID count by their size and mtime.
// Computed once per process.
const std::string& build_identity();

// Writes `bytes` to `path` through a temporary file in the same directory and a rename, creating the directory;
// false (and nothing at `path`) on any failure.
bool write_file_atomically(const std::string& path, std::string_view bytes);

// Keeps at most `max_files` regular files in `dir`, removing the least recently modified first (entries of earlier
// builds and models never read again): caches stay bounded without an expiry policy.
void prune_directory(const std::string& dir, size_t max_files);

}  // namespace steadyocr
