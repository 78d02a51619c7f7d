// The processes of a distributed job and the collectives between them, on MPI (OpenMPI, as in
// Horovod and PyTorch's MPI backend). Launch the program with mpirun; every process calls
// ProcessGroup::init() once and gets its rank among size() processes.
//
//   auto group = distributed::ProcessGroup::init();   // MPI_Init_thread on first use
//   group->allreduce_sum(t);                          // t = sum over ranks, on every rank
//
// Collectives must be called in the same order on every rank. Every wait is bounded by
// options.timeout: a peer that died or hangs turns into a DistributedError here instead of a
// hang. abort() ends the whole job (MPI_Abort); call it when a rank cannot continue, so the
// others do not wait for it. A rank that exits (returns from main, std::exit) waits up to
// options.timeout for every rank to exit too, then finalizes MPI; when they do not all come, or a
// collective failed before, it aborts the job instead (a rank finalizing while another aborts
// can hang OpenMPI's mpirun).
//
// Built without MPI (no libopenmpi-dev at configure time), is_available() is false and init()
// throws a DistributedError saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "../../tensor/error.h"
#include "../../tensor/tensor.h"

namespace aclgrad::distributed {

/// A collective failed or timed out, MPI is not available, or a distributed API was misused.
class DistributedError : public Error {
  using Error::Error;
};

/// Whether this build of aclgrad has MPI support.
bool is_available();

struct ProcessGroupOptions {
  /// Longest a collective may take before DistributedError (PyTorch's default is 30 minutes;
  /// the first collectives after start-up include connection set-up), and longest an exiting
  /// rank waits for the others to exit before it aborts the job.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// A collective in flight (started by allreduce_sum_async). The tensor it works on must stay
/// alive and untouched until wait() returns.
class Work {
 public:
  virtual ~Work() = default;
  /// Drives progress; true once complete.
  virtual bool test() = 0;
  /// Blocks until complete; DistributedError after the group's timeout.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  /// The group of all processes of the job (MPI_COMM_WORLD), initialising MPI on first call
  /// (later calls return the same group; options apply from the first). Outside mpirun this is
  /// a group of one process.
  static std::shared_ptr<ProcessGroup> init(const ProcessGroupOptions& options = {});
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Ranks running on this rank's host (they share its cores: give each cores / local_size()
  /// threads).
  virtual int local_size() const = 0;
  /// Name of the host this rank runs on.
  virtual std::string host() const = 0;
  const ProcessGroupOptions& options() const { return options_; }

  /// t (contiguous, any dtype) = rank root's t, in place on every rank.
  virtual void broadcast(const Tensor& t, int root = 0) = 0;
  /// t (contiguous float32/float64) = sum of t over ranks, in place on every rank.
  virtual void allreduce_sum(const Tensor& t) = 0;
  /// Starts allreduce_sum(t) and returns at once.
  virtual std::unique_ptr<Work> allreduce_sum_async(const Tensor& t) = 0;
  /// True when every rank passed the same value (e.g. a hash of the model's structure).
  virtual bool all_equal(uint64_t value) = 0;
  virtual void barrier() = 0;
  /// Prints "aclgrad: rank R on HOST: message" to stderr and ends every process of the job with
  /// exit code `code` (MPI_Abort). Does not return.
  [[noreturn]] virtual void abort(const std::string& message, int code = 1) = 0;

 protected:
  explicit ProcessGroup(const ProcessGroupOptions& options) : options_(options) {}
  ProcessGroupOptions options_;
};

}  // namespace aclgrad::distributed
