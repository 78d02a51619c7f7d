// Writing a whole file atomically: readers see the old file or the new one, never a torn one.
#pragma once

#include <string>
#include <string_view>

namespace aclgrad::examples {

/// Writes content to "path.tmp", flushes it, then renames it over path. Throws std::runtime_error
/// naming the path and the system error on failure (the temporary file is removed then).
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace aclgrad::examples
