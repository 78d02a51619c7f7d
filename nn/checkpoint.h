// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors), readable
// by Python's `safetensors` package and written atomically.
//
// File layout (all integers little-endian):
//   8 bytes   N, the header length (u64)
//   N bytes   UTF-8 JSON object, padded with spaces to a multiple of 8:
//               {"__metadata__": {"key": "value", ...},              (optional, strings only)
//                "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   rest      the data section: each tensor's row-major bytes at [begin, end) (relative to the
//             section start), packed with no gap or overlap, covering the section exactly.
// dtypes: F32, F64, F16, BF16, I64, BOOL (1 byte, 0 or 1). We write like the reference writer:
// tensors ordered by dtype alignment (I64, F64, F32, BF16, F16, BOOL) then by name, so every
// tensor's data is aligned to its element size; header keys dtype, shape, data_offsets.
//
//   nn::save_safetensors("w.safetensors", {{"w", w}, {"b", b}}, {{"step", "100"}});
//   nn::Metadata meta;
//   nn::TensorMap t = nn::load_safetensors("w.safetensors", &meta);
//
//   nn::save(*model, "model.safetensors", optimizer_tensors, {{"epoch", "3"}});
//   nn::CheckpointExtras extra = nn::load(*model, "model.safetensors");   // optimizer tensors
//
// Reading checks everything and throws Error naming the file (and the tensor, with expected vs
// got) on: a short file, a header length beyond the file, a header that is not a JSON object
// (parse errors give the byte position), nesting deeper than 128 levels (refused before
// parsing), numbers beyond double range (naming the tensor and field), duplicate names, unknown or
// unsupported dtype strings, malformed shapes or offsets, byte counts that do not match shape x
// dtype, offsets outside the data section, overlapping tensors, gaps or trailing bytes, BOOL bytes
// other than 0/1, non-string metadata. Messages quote at most a short prefix of what the file
// holds. The header is checked against the file size before any data is read. load() additionally
// checks the names, shapes and dtypes against the module before copying anything, so the module is
// untouched on any error.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "../nn/module.h"
#include "../tensor/tensor.h"

namespace aclgrad::nn {

using TensorMap = std::map<std::string, Tensor>;
/// The "__metadata__" strings of a file.
using Metadata = std::map<std::string, std::string>;

/// The file bytes for tensors and metadata (what save_safetensors writes). Tensors may be
/// non-contiguous (they are written row-major). Error for an undefined tensor or the reserved
/// name "__metadata__".
std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata = {});
/// Parses and validates file bytes; source names the file in error messages. Every tensor gets
/// its own contiguous storage.
TensorMap deserialize_safetensors(std::string_view bytes, Metadata* metadata = nullptr,
                                  const std::string& source = "<memory>");

/// Writes tensors and metadata to path atomically: the bytes go to a temporary file
/// "path.tmp-XXXXXX" in the same directory, which is fsync'ed then renamed over path (and the
/// directory fsync'ed). On any failure the temporary file is removed, path is left as it was
/// (absent, or the previous complete file), and Error names the path and the system error.
void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const Metadata& metadata = {});
/// The same for an ordered list such as Module::state_dict(); Error on a repeated name.
void save_safetensors(const std::string& path, const NamedList<Tensor>& tensors,
                      const Metadata& metadata = {});
/// Braced lists, {{"w", w}, {"b", b}}, resolve here (names must be distinct).
inline void save_safetensors(const std::string& path,
                             std::initializer_list<std::pair<const std::string, Tensor>> tensors,
                             const Metadata& metadata = {}) {
  save_safetensors(path, NamedList<Tensor>(tensors.begin(), tensors.end()), metadata);
}
/// Reads the header, validates it (see the list above) against the file size, then reads only
/// the data, straight into each tensor; fills *metadata when given.
TensorMap load_safetensors(const std::string& path, Metadata* metadata = nullptr);

/// What a module checkpoint holds besides the module's own state.
struct CheckpointExtras {
  TensorMap tensors;
  Metadata metadata;
};

/// Metadata key under which save() lists the names of the extra tensors (a JSON array).
inline constexpr const char* kExtraTensorsKey = "aclgrad.extra_tensors";

/// Saves module.state_dict() (parameters and buffers, dotted names) plus extra tensors (e.g. an
/// optimizer's state) and metadata, atomically. Error if an extra name clashes with the
/// module's, or metadata uses kExtraTensorsKey.
void save(const Module& module, const std::string& path, const TensorMap& extra_tensors = {},
          const Metadata& metadata = {});
/// Loads a file written by save() (or any safetensors file with the module's names) into
/// module, after validating the file and every name, shape and dtype (see
/// Module::load_state_dict; strict = the file holds no tensor other than the module's and the
/// declared extras). Returns the extra tensors and the metadata (without kExtraTensorsKey).
/// On any error the module is left untouched.
CheckpointExtras load(Module& module, const std::string& path, bool strict = true);

}  // namespace aclgrad::nn
