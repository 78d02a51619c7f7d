#include "support/acl_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "aclnn/aclnn_cpu_conv.h"
#include "aclnn/aclnn_cpu_extensions.h"
#include "aclnn/aclnn_cpu_isa.h"

namespace acltest {

// ---------------------------------------------------------------------------------------------
// runtime

namespace {
struct Runtime {
  aclrtStream stream = nullptr;
  Runtime() {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
        aclrtCreateStream(&stream) != ACL_SUCCESS) {
      std::fprintf(stderr, "acltest: runtime set-up failed: %s\n", aclGetRecentErrMsg());
      std::abort();
    }
  }
  ~Runtime() {
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
  }
};
}  // namespace

aclrtStream SharedStream() {
  static Runtime runtime;
  return runtime.stream;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  SharedStream();  // the runtime must be up before aclrtMalloc
  if (aclrtMalloc(&ptr_, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || ptr_ == nullptr) {
    throw std::runtime_error("acltest: aclrtMalloc(" + std::to_string(bytes) +
                             ") failed: " + aclGetRecentErrMsg());
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) aclrtFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) aclrtFree(ptr_);
}

void DeviceBuffer::CopyFromHost(const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (aclrtMemcpy(ptr_, bytes_, src, bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    throw std::runtime_error(std::string("acltest: aclrtMemcpy H2D failed: ") +
                             aclGetRecentErrMsg());
  }
}

void DeviceBuffer::CopyToHost(void* dst, size_t bytes) const {
  if (bytes == 0) return;
  if (aclrtMemcpy(dst, bytes, ptr_, bytes, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
    throw std::runtime_error(std::string("acltest: aclrtMemcpy D2H failed: ") +
                             aclGetRecentErrMsg());
  }
}

IntArrayPtr MakeIntArray(const std::vector<int64_t>& values) {
  return IntArrayPtr(aclCreateIntArray(values.data(), values.size()), aclDestroyIntArray);
}

BoolArrayPtr MakeBoolArray(const std::vector<bool>& values) {
  std::unique_ptr<bool[]> raw(new bool[values.size() + 1]);
  for (size_t i = 0; i < values.size(); ++i) raw[i] = values[i];
  return BoolArrayPtr(aclCreateBoolArray(raw.get(), values.size()), aclDestroyBoolArray);
}

// ---------------------------------------------------------------------------------------------
// values and layouts

std::vector<double> Rng::Uniform(int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : v) x = dist(gen_);
  return v;
}

int64_t Rng::Int(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
}

std::vector<std::string> VerboseLines(const std::string& log, const std::string& kind,
                                      const std::string& part) {
  const std::string prefix = "aclnn_cpu_verbose," + kind + ",";
  std::vector<std::string> lines;
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find('\n', at), log.size());
    std::string line = log.substr(at, end - at);
    at = end + 1;
    if (line.rfind(prefix, 0) == 0 && line.find(part) != std::string::npos)
      lines.push_back(std::move(line));
  }
  return lines;
}

std::string LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kPermuted:
      return "permuted";
    case Layout::kPadded:
      return "padded";
    case Layout::kExpanded:
      return "expanded";
  }
  return "?";
}

StridedLayout MakeLayout(const std::vector<int64_t>& shape, Layout layout, uint64_t seed) {
  const size_t rank = shape.size();
  if (layout == Layout::kExpanded) {
    StridedLayout out;
    out.strides.assign(rank, 0);
    out.offset = 1;
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      if (d == 0 || d + 1 == rank) continue;  // broadcast dims keep stride 0
      out.strides[d] = stride;
      stride *= shape[d];
    }
    out.storage_elems = out.offset + stride;
    return out;
  }
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + rank);
  std::vector<size_t> order(rank);  // order[0] = outermost stored dim
  std::iota(order.begin(), order.end(), 0);
  if (layout != Layout::kContiguous && rank >= 2) {
    std::vector<size_t> identity = order;
    while (order == identity) std::shuffle(order.begin(), order.end(), gen);
  }
  const bool padded = layout == Layout::kPadded;
  StridedLayout out;
  out.strides.assign(rank, 1);
  out.offset = padded ? 1 + static_cast<int64_t>(gen() % 7) : 0;
  int64_t stride = padded ? 2 : 1;  // step along the innermost stored dim
  for (size_t j = rank; j-- > 0;) {
    size_t d = order[j];
    out.strides[d] = stride;
    int64_t extent = shape[d] + (padded ? 1 + static_cast<int64_t>(gen() % 2) : 0);
    stride *= extent;
  }
  out.storage_elems = out.offset + stride;
  return out;
}

aclFormat DefaultFormat(size_t rank) {
  switch (rank) {
    case 3:
      return ACL_FORMAT_NCL;
    case 4:
      return ACL_FORMAT_NCHW;
    case 5:
      return ACL_FORMAT_NCDHW;
    default:
      return ACL_FORMAT_ND;
  }
}

// ---------------------------------------------------------------------------------------------
// TestTensor

namespace {
// Quiet NaNs with a recognisable payload: an element an operator forgets to write cannot match a
// reference value by accident, and a masked-out output is checked byte for byte. (8-bit: the
// negative NaN of E4M3FN, the one NaN of HIFLOAT8; finite sums never give either.)
void EncodeSentinel(aclDataType dtype, uint8_t* dst) {
  const uint16_t h = 0x7E5A, b = 0x7FDA;
  const uint32_t f = 0x7FC5A5A5u;
  const uint64_t d = 0x7FF8A5A5A5A5A5A5ull;
  switch (dtype) {
    case ACL_FLOAT16:
      std::memcpy(dst, &h, 2);
      break;
    case ACL_BF16:
      std::memcpy(dst, &b, 2);
      break;
    case ACL_FLOAT:
      std::memcpy(dst, &f, 4);
      break;
    case ACL_FLOAT8_E4M3FN:
      *dst = 0xFF;
      break;
    case ACL_HIFLOAT8:
      *dst = 0x80;
      break;
    default:
      std::memcpy(dst, &d, 8);
      break;
  }
}
}  // namespace

TestTensor::TestTensor(const std::vector<int64_t>& shape, aclDataType dtype, Layout layout,
                       uint64_t layout_seed, aclFormat format)
    : shape_(shape),
      dtype_(dtype),
      format_(format == ACL_FORMAT_UNDEFINED ? DefaultFormat(shape.size()) : format),
      layout_(MakeLayout(shape, layout, layout_seed)),
      buffer_(static_cast<size_t>(std::max<int64_t>(layout_.storage_elems, 1)) *
              DtypeBytes(dtype)) {
  std::vector<int64_t> storage_dims =
      layout == Layout::kContiguous ? shape : std::vector<int64_t>{layout_.storage_elems};
  tensor_.reset(aclCreateTensor(shape_.data(), shape_.size(), dtype_, layout_.strides.data(),
                                layout_.offset, format_, storage_dims.data(), storage_dims.size(),
                                buffer_.data()));
  if (!tensor_) {
    throw std::runtime_error("acltest: aclCreateTensor failed for " + Describe() + ": " +
                             aclGetRecentErrMsg());
  }
  FillSentinel();
}

TestTensor TestTensor::Output(const std::vector<int64_t>& shape, aclDataType dtype, Layout layout,
                              uint64_t layout_seed, aclFormat format) {
  return TestTensor(shape, dtype, layout, layout_seed, format);  // constructed sentinel-filled
}

template <class F>
void TestTensor::ForEachElement(F&& f) const {
  const size_t rank = shape_.size();
  const int64_t n = numel();
  std::vector<int64_t> idx(rank, 0);
  int64_t storage = layout_.offset;
  for (int64_t linear = 0; linear < n; ++linear) {
    f(linear, storage);
    for (size_t d = rank; d-- > 0;) {  // odometer, last dim fastest
      storage += layout_.strides[d];
      if (++idx[d] < shape_[d]) break;
      storage -= layout_.strides[d] * shape_[d];
      idx[d] = 0;
    }
  }
}

void TestTensor::Encode(double v, uint8_t* dst) const {
  switch (dtype_) {
    case ACL_FLOAT16: {
      uint16_t h = EncodeF16(v);
      std::memcpy(dst, &h, 2);
      break;
    }
    case ACL_BF16: {
      uint16_t b = EncodeBF16(v);
      std::memcpy(dst, &b, 2);
      break;
    }
    case ACL_FLOAT: {
      auto f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      break;
    }
    case ACL_FLOAT8_E4M3FN:
      *dst = EncodeE4M3FN(v);
      break;
    case ACL_HIFLOAT8:
      *dst = EncodeHiF8(v);
      break;
    default:
      std::memcpy(dst, &v, 8);
      break;
  }
}

double TestTensor::Decode(const uint8_t* src) const {
  switch (dtype_) {
    case ACL_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      return DecodeF16(h);
    }
    case ACL_BF16: {
      uint16_t b;
      std::memcpy(&b, src, 2);
      return DecodeBF16(b);
    }
    case ACL_FLOAT: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case ACL_FLOAT8_E4M3FN:
      return DecodeE4M3FN(*src);
    case ACL_HIFLOAT8:
      return DecodeHiF8(*src);
    default: {
      double d;
      std::memcpy(&d, src, 8);
      return d;
    }
  }
}

void TestTensor::WriteStorage(const std::vector<uint8_t>& host) {
  buffer_.CopyFromHost(host.data(), host.size());
  initial_ = host;
}

std::vector<uint8_t> TestTensor::ReadStorage() const {
  std::vector<uint8_t> host(buffer_.size());
  buffer_.CopyToHost(host.data(), host.size());
  return host;
}

void TestTensor::FillSentinel() {
  const size_t eb = DtypeBytes(dtype_);
  std::vector<uint8_t> host(buffer_.size());
  for (size_t i = 0; i + eb <= host.size(); i += eb) EncodeSentinel(dtype_, &host[i]);
  values_.clear();
  WriteStorage(host);
}

void TestTensor::Fill(const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != numel()) {
    throw std::invalid_argument("acltest: Fill got " + std::to_string(values.size()) +
                                " values for " + Describe());
  }
  const size_t eb = DtypeBytes(dtype_);
  std::vector<uint8_t> host(buffer_.size());
  for (size_t i = 0; i + eb <= host.size(); i += eb) EncodeSentinel(dtype_, &host[i]);
  values_.resize(values.size());
  ForEachElement([&](int64_t linear, int64_t storage) {
    Encode(RoundToDtype(values[linear], dtype_), &host[static_cast<size_t>(storage) * eb]);
  });
  ForEachElement([&](int64_t linear, int64_t storage) {  // what the view really holds
    values_[linear] = Decode(&host[static_cast<size_t>(storage) * eb]);
  });
  WriteStorage(host);
}

std::vector<double> TestTensor::Read() const {
  const size_t eb = DtypeBytes(dtype_);
  std::vector<uint8_t> host = ReadStorage();
  std::vector<double> out(static_cast<size_t>(numel()));
  ForEachElement([&](int64_t linear, int64_t storage) {
    out[linear] = Decode(&host[static_cast<size_t>(storage) * eb]);
  });
  return out;
}

bool TestTensor::Untouched() const {
  return ReadStorage() == initial_;
}

bool TestTensor::OnlyViewWritten() const {
  const size_t eb = DtypeBytes(dtype_);
  std::vector<uint8_t> host = ReadStorage();
  ForEachElement([&](int64_t, int64_t storage) {  // view elements: accept anything
    std::memcpy(&host[static_cast<size_t>(storage) * eb],
                &initial_[static_cast<size_t>(storage) * eb], eb);
  });
  return host == initial_;
}

AclTensorPtr TestTensor::View(const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& strides, int64_t offset,
                              aclFormat format) const {
  std::vector<int64_t> storage_dims{std::max<int64_t>(layout_.storage_elems, 0)};
  AclTensorPtr view(aclCreateTensor(shape.data(), shape.size(), dtype_, strides.data(), offset,
                                    format, storage_dims.data(), 1, buffer_.data()),
                    aclDestroyTensor);
  if (!view) {
    throw std::runtime_error("acltest: aclCreateTensor (view " + ShapeStr(shape) + " strides " +
                             ShapeStr(strides) + ") failed: " + aclGetRecentErrMsg());
  }
  return view;
}

std::string TestTensor::Describe() const {
  std::ostringstream os;
  os << DtypeName(dtype_) << ShapeStr(shape_) << " strides " << ShapeStr(layout_.strides)
     << " offset " << layout_.offset;
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// two-phase call

std::string CallResult::Describe() const {
  return "status " + std::to_string(status) + " in " + phase + ": " + message;
}

CallResult RunTwoPhase(const PlanFn& plan, LaunchFn launch, aclrtStream stream) {
  CallResult r;
  aclOpExecutor* executor = nullptr;
  auto fail = [&](aclnnStatus status, const char* phase) {
    r.status = status;
    r.phase = phase;
    r.message = aclGetRecentErrMsg();
    return r;
  };
  const uint32_t extensions =
      aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE | ACLNN_CPU_EXT_STRIDED_OUTPUTS);
  aclnnStatus st = plan(&r.workspace_size, &executor);
  aclnnCpuSetExtensions(extensions);
  if (st != 0) return fail(st, "GetWorkspaceSize");
  DeviceBuffer workspace;
  try {
    workspace = DeviceBuffer(r.workspace_size);
  } catch (const std::exception& e) {
    r.status = ACL_ERROR_BAD_ALLOC;
    r.phase = "malloc";
    r.message = e.what();
    return r;
  }
  st = launch(workspace.data(), r.workspace_size, executor, stream);
  if (st != 0) return fail(st, "launch");
  st = aclrtSynchronizeStream(stream);
  if (st != 0) return fail(st, "synchronize");
  return r;
}

namespace {

// ctest runs the aclnn suites again on the narrower tiers and with policies forced
// (tests/aclnn/CMakeLists.txt): such a run sets ACLNN_TEST_TIER_RUN=<VAR>=<value>, one of
// libaclnn's switches (ACLNN_CPU_MAX_ISA=avx2, ACLNN_CPU_BF16_DOT=1, ...). It is set here, before
// main and so before libaclnn's first call reads the switches (one variable, because ctest's
// test discovery cannot pass two). Where the switch changes nothing on this CPU (an AVX2 CPU
// under ACLNN_CPU_MAX_ISA=avx2; ACLNN_CPU_BF16_DOT=1 without AVX512_BF16) the run would repeat
// another one, and every test of it skips, saying why.
const char* TierRunSwitch() {
  const char* run = std::getenv("ACLNN_TEST_TIER_RUN");
  return run && std::strchr(run, '=') ? run : nullptr;
}

[[maybe_unused]] const bool kTierRunApplied = [] {
  if (const char* run = TierRunSwitch()) {
    const char* eq = std::strchr(run, '=');
    setenv(std::string(run, eq).c_str(), eq + 1, 1);
  }
  return true;
}();

std::string RepeatedTierRun() {
  const char* run = TierRunSwitch();
  if (!run) return "";
  const std::string sw = run;
  if (sw.rfind("ACLNN_CPU_MAX_ISA=", 0) == 0 &&
      std::strcmp(aclnnCpuIsa(), aclnnCpuIsaUncapped()) == 0)
    return sw + " leaves this CPU's tier " + aclnnCpuIsa() + ": the default run covers it";
  if (sw == "ACLNN_CPU_BF16_DOT=1" && !Bf16DotRuns())
    return sw + " cannot run the dot kernels here (" + aclnnCpuDescribe() +
           "): the =0 run covers it";
  return "";
}

class TierRunEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string why = RepeatedTierRun();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

[[maybe_unused]] ::testing::Environment* const kTierRun =
    ::testing::AddGlobalTestEnvironment(new TierRunEnvironment);

}  // namespace

std::string IsaInForce() {
  return aclnnCpuIsa();
}

bool Avx512Runs() {
  return aclnnCpuIsaRuns("avx512") == 1;
}

bool PackedKernelsRun() {
  return aclnnCpuIsaRuns("avx2") == 1;
}

bool Bf16DotRuns() {
  return aclnnCpuPolicy("bf16_dot") == 1;
}

std::string AmxTilesInForce() {
  switch (aclnnCpuConvAmxTiles()) {
    case 0:
      return "off";
    case 1:
      return "on";
    case 2:
      return "model";
  }
  ADD_FAILURE() << "aclnnCpuConvAmxTiles() = " << aclnnCpuConvAmxTiles();
  return "?";
}

bool AlgorithmRunsHere(const std::string& name, const std::string& primitive) {
  for (int i = 0; i < aclnnCpuConvAlgorithmCount(); ++i)
    if (name == aclnnCpuConvAlgorithmName(i) &&
        (primitive.empty() || primitive == aclnnCpuConvAlgorithmPrimitive(i)))
      return aclnnCpuConvAlgorithmRunsHere(i) == 1;
  ADD_FAILURE() << "no algorithm named " << name << (primitive.empty() ? "" : " for ") << primitive;
  return false;
}

}  // namespace acltest
