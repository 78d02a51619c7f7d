// Test support over aclnn's public C API only: device buffers, tensors with any dtype and strided
// layout, dtype encoders, the two-phase call, seeded values. Nothing here knows the implementation.
//
//   acltest::Rng rng(42);
//   acltest::TestTensor x({2, 3, 7}, ACL_FLOAT16, acltest::Layout::kPadded, /*layout_seed=*/1);
//   x.Fill(rng.Uniform(x.numel()));         // host values are rounded to f16 and kept as double
//   acltest::TestTensor y = acltest::TestTensor::Output({2, 5, 5}, ACL_FLOAT);  // sentinel-filled
//   acltest::CallResult r = acltest::RunTwoPhase(
//       [&](uint64_t* ws, aclOpExecutor** ex) { return aclnnXxxGetWorkspaceSize(..., ws, ex); },
//       aclnnXxx);
//   ASSERT_TRUE(r.ok()) << r.Describe();
//   std::vector<double> got = y.Read();     // logical row-major, decoded to double
//   EXPECT_TRUE(y.OnlyViewWritten());       // the gaps of a strided storage kept the sentinel
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace acltest {

// ---- dtype helpers (round-to-nearest-even, subnormals, overflow to inf) ----

// Rounds x to a binary floating format with `mant_bits` explicit mantissa bits and normal exponent
// range [emin, emax]; the result is returned as a double (exactly representable in the format).
double RoundToFormat(double x, int mant_bits, int emin, int emax);
double RoundToF16(double x);   // IEEE binary16
double RoundToBF16(double x);  // bfloat16 (8-bit exponent, 7 mantissa bits)
double RoundToF32(double x);
double RoundToHF32(double x);  // fp32 with the low 12 mantissa bits dropped: 11 mantissa bits
double RoundToDtype(double x, aclDataType dtype);  // FLOAT, FLOAT16, BF16, DOUBLE, 8-bit
uint16_t EncodeF16(double x);
double DecodeF16(uint16_t bits);
uint16_t EncodeBF16(double x);
double DecodeBF16(uint16_t bits);
// The 8-bit floats of Ascend910_95, written from the format definitions (OCP FP8 E4M3; HiFloat8,
// arXiv 2409.16626). The encoders pick the nearest of the 256 decoded codes: FLOAT8_E4M3FN ties
// to the even code, |x| > 464 and +/-Inf give NaN (with x's sign), -0 stays -0; HIFLOAT8 ties
// away from zero, |x| >= 40960 gives +/-Inf, a result of zero is the one zero 0x00. NaN gives
// NaN (E4M3FN: S.1111.111 with x's sign; HIFLOAT8: 0x80).
double DecodeE4M3FN(uint8_t bits);
uint8_t EncodeE4M3FN(double x);
double DecodeHiF8(uint8_t bits);
uint8_t EncodeHiF8(double x);
// Distance between adjacent values of `dtype` near |x| (for |x| = 0: the smallest normal's ulp).
double UlpOf(double x, aclDataType dtype);
size_t DtypeBytes(aclDataType dtype);  // 1, 2, 4 or 8 for the float dtypes (8-bit included)
std::string DtypeName(aclDataType dtype);
std::string ShapeStr(const std::vector<int64_t>& shape);
// What libaclnn runs here, as libaclnn itself says (aclnn/aclnn_cpu_isa.h: the CPU, the OS and
// the caps ACLNN_CPU_MAX_ISA, ACLNN_CPU_NO_AVX512, ACLNN_CPU_BF16_DOT). Tests never re-derive it.
// The tier in force: "none", "avx2", "avx512", "avx512_bf16" or "amx".
std::string IsaInForce();
// Whether libaclnn's AVX-512 kernels run here (tier avx512 or wider).
bool Avx512Runs();
// Whether libaclnn's packed AVX2 or AVX-512 kernels run here (tier avx2 or wider).
bool PackedKernelsRun();
// Whether bf16 inputs run the AVX512_BF16 dot kernels (the "bf16_dot" policy).
bool Bf16DotRuns();
// Where the AMX kernels run (aclnnCpuConvAmxTiles): "off", "on" (the CPU's tiles) or "model"
// (the software model: the test library libaclnn_amx_model).
std::string AmxTilesInForce();
// Whether bf16 inputs are read natively by some engine (the dot kernels or the AMX tiles).
inline bool Bf16NativeRuns() {
  return Bf16DotRuns() || AmxTilesInForce() != "off";
}
// Whether the registered algorithm `name` can run at the tier in force
// (aclnnCpuConvAlgorithmRunsHere), for `primitive` ("forward", "backward_data",
// "backward_weight") or, with "", for the first primitive that registers that name. A name no
// algorithm has is a test failure.
bool AlgorithmRunsHere(const std::string& name, const std::string& primitive = "");
// The ACLNN_CPU_VERBOSE lines of one kind ("plan": "aclnn_cpu_verbose,plan,<api>,<primitive>,
// <algorithm>,..."; "exec": "aclnn_cpu_verbose,exec,<api>,<primitive>,<algorithm>,<ms> ms") of a
// captured stderr log, in order; only those containing `part` where it is not empty.
std::vector<std::string> VerboseLines(const std::string& log, const std::string& kind,
                                      const std::string& part = "");
inline std::vector<std::string> VerbosePlanLines(const std::string& log,
                                                 const std::string& part = "") {
  return VerboseLines(log, "plan", part);
}
int64_t Numel(const std::vector<int64_t>& shape);

// ---- runtime ----

// The process-wide stream (aclInit + aclrtSetDevice(0) + aclrtCreateStream on first use; torn
// down at exit).
aclrtStream SharedStream();

// "Device" memory from aclrtMalloc, freed by aclrtFree. Size 0 allocates nothing (data() null).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* data() const { return ptr_; }
  size_t size() const { return bytes_; }
  void CopyFromHost(const void* src, size_t bytes);  // aclrtMemcpy HOST_TO_DEVICE
  void CopyToHost(void* dst, size_t bytes) const;    // aclrtMemcpy DEVICE_TO_HOST

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using AclTensorPtr = std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)>;
using IntArrayPtr = std::unique_ptr<aclIntArray, aclnnStatus (*)(const aclIntArray*)>;
using BoolArrayPtr = std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray*)>;
IntArrayPtr MakeIntArray(const std::vector<int64_t>& values);
BoolArrayPtr MakeBoolArray(const std::vector<bool>& values);

// ---- seeded values ----
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  std::vector<double> Uniform(int64_t n, double lo = -1.0, double hi = 1.0);
  int64_t Int(int64_t lo, int64_t hi);  // inclusive
  std::mt19937_64& gen() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// ---- tensors ----

// How a tensor's elements are placed in its storage.
//  kContiguous: row-major, offset 0.
//  kPermuted:   dense but with the dims stored in a seeded non-identity order (strides permuted).
//  kPadded:     permuted order, plus a leading offset, 1-2 padding elements after every dim and a
//               step of 2 along the innermost stored dim (so no two neighbours are adjacent).
//  kExpanded:   inputs only: stride 0 along dim 0 and along the last dim (rank >= 2; rank 1: the
//               only dim), like an expanded/broadcast view; the rest dense, offset 1. Logical
//               values then repeat (Fill keeps what the storage really holds).
enum class Layout { kContiguous, kPermuted, kPadded, kExpanded };
std::string LayoutName(Layout layout);

struct StridedLayout {
  std::vector<int64_t> strides;  // elements
  int64_t offset = 0;            // elements
  int64_t storage_elems = 0;     // every reachable element index is < storage_elems
};
StridedLayout MakeLayout(const std::vector<int64_t>& shape, Layout layout, uint64_t seed);

// Default format by rank: 1-d ND, 3-d NCL, 4-d NCHW, 5-d NCDHW, otherwise ND.
aclFormat DefaultFormat(size_t rank);

// A tensor the test owns: logical values (double, row-major over `shape`, already rounded to
// dtype), a device storage laid out per `layout`, and the aclTensor describing the view.
class TestTensor {
 public:
  TestTensor(const std::vector<int64_t>& shape, aclDataType dtype,
             Layout layout = Layout::kContiguous, uint64_t layout_seed = 0,
             aclFormat format = ACL_FORMAT_UNDEFINED /* = DefaultFormat(rank) */);
  // An output: storage (including the gaps) filled with the sentinel pattern.
  static TestTensor Output(const std::vector<int64_t>& shape, aclDataType dtype,
                           Layout layout = Layout::kContiguous, uint64_t layout_seed = 0,
                           aclFormat format = ACL_FORMAT_UNDEFINED);
  TestTensor(TestTensor&&) noexcept = default;
  TestTensor& operator=(TestTensor&&) noexcept = default;

  // Rounds `values` (logical row-major, numel() of them) to dtype and writes them into the
  // storage; the gaps of the storage hold the sentinel. values() then returns what the view reads
  // (with a stride-0 layout, the last value written to each shared element).
  void Fill(const std::vector<double>& values);
  void FillSentinel();  // whole storage = sentinel; remembered for the checks below
  // Decodes the view back (reads the device storage through strides and offset).
  std::vector<double> Read() const;
  // True if the whole storage still holds the sentinel (a masked-out output was not touched).
  bool Untouched() const;
  // True if every storage element outside the view still holds what Fill/FillSentinel put there.
  bool OnlyViewWritten() const;

  aclTensor* get() const { return tensor_.get(); }
  // A second aclTensor over the same storage with other view dims/strides/offset (zero copy).
  AclTensorPtr View(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    int64_t offset, aclFormat format) const;
  const std::vector<double>& values() const { return values_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return layout_.strides; }
  int64_t offset() const { return layout_.offset; }
  int64_t numel() const { return Numel(shape_); }
  aclDataType dtype() const { return dtype_; }
  std::string Describe() const;  // e.g. "f16[2,3,7] strides [42,2,6] offset 3"

 private:
  void WriteStorage(const std::vector<uint8_t>& host);
  std::vector<uint8_t> ReadStorage() const;
  void Encode(double v, uint8_t* dst) const;
  double Decode(const uint8_t* src) const;
  template <class F>
  void ForEachElement(F&& f) const;  // f(logical_index, storage_index)

  std::vector<int64_t> shape_;
  aclDataType dtype_;
  aclFormat format_;
  StridedLayout layout_;
  std::vector<double> values_;
  std::vector<uint8_t> initial_;  // storage image after the last Fill/FillSentinel
  DeviceBuffer buffer_;
  AclTensorPtr tensor_{nullptr, aclDestroyTensor};
};

// ---- the two-phase call ----
struct CallResult {
  aclnnStatus status = 0;
  std::string phase;  // "GetWorkspaceSize", "malloc", "launch" or "synchronize" on failure
  std::string message;
  uint64_t workspace_size = 0;
  bool ok() const { return status == 0; }
  std::string Describe() const;  // "status 161002 in GetWorkspaceSize: <message>"
};

using PlanFn = std::function<aclnnStatus(uint64_t* workspace_size, aclOpExecutor** executor)>;
using LaunchFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);
// Phase 1 (plan), aclrtMalloc of the workspace (skipped when 0), phase 2 (launch) on `stream`,
// aclrtSynchronizeStream. Stops at the first failure, returning its status and
// aclGetRecentErrMsg(). Phase 1 runs with the CPU-only extensions DOUBLE (as the framework's calls
// do) and STRIDED_OUTPUTS, so numeric tests may use ACL_DOUBLE and strided backward outputs; the
// conformance and error tests call phase 1 directly and see the emulated chips only.
CallResult RunTwoPhase(const PlanFn& plan, LaunchFn launch, aclrtStream stream = SharedStream());

// Sets an environment variable for a scope (the forcing switches: ACLNN_CPU_CONV_ALGO, ...) and
// restores its previous value, or its absence, afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace acltest
