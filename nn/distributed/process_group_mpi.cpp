// ProcessGroup on MPI (compiled when CMake found MPI). Only the thread that called init() makes
// MPI calls (MPI_THREAD_FUNNELED); waits poll MPI_Test so they can time out.
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "nn/distributed/process_group.h"

namespace aclgrad::distributed {

bool is_available() {
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw DistributedError(std::string(what) + " failed: " + std::string(text, length));
}

MPI_Datatype reduce_type(const Tensor& t, const char* op) {
  check<DistributedError>(t.is_contiguous(), op, ": expected a contiguous tensor, got shape ",
                          t.sizes(), " strides ", t.strides());
  if (t.dtype() == Dtype::Float32) return MPI_FLOAT;
  if (t.dtype() == Dtype::Float64) return MPI_DOUBLE;
  throw DistributedError(std::string(op) + ": expected a float32 or float64 tensor, got " +
                         std::string(dtype_name(t.dtype())));
}

int checked_count(int64_t count, const char* op) {
  check<DistributedError>(count <= INT_MAX, op, ": ", count,
                          " elements is more than one MPI call takes (", INT_MAX, ")");
  return static_cast<int>(count);
}

// Set once a collective failed or timed out: the ranks no longer agree on which collective comes
// next, so this rank must not wait for the others at exit. One MPI world per process.
std::atomic<bool> collective_failed{false};
// Set by abort() before MPI_Abort: the exit handler must not touch MPI any more.
std::atomic<bool> aborting{false};

// Polls req until it completes (true) or `timeout` has passed (false), yielding first (latency),
// then sleeping (other threads of this rank and other ranks on the same cores get to run).
bool poll_until_done(MPI_Request& req, const char* what, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  for (int spins = 0;; ++spins) {
    int done = 0;
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return true;
    if (spins < 2000) {
      std::this_thread::yield();
      continue;
    }
    if (Clock::now() - start > timeout) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Waits for a collective; DistributedError after `timeout`.
void wait_request(MPI_Request& req, const std::string& what, std::chrono::milliseconds timeout,
                  int rank) {
  bool done = false;
  try {
    done = poll_until_done(req, what.c_str(), timeout);
  } catch (const DistributedError&) {
    collective_failed = true;
    throw;
  }
  if (done) return;
  collective_failed = true;
  throw DistributedError(
      "rank " + std::to_string(rank) + ": " + what + " did not complete within " +
      std::to_string(timeout.count()) +
      " ms; another rank has probably failed or stopped calling the same collectives");
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request req, std::string what, std::chrono::milliseconds timeout, int rank)
      : req_(req), what_(std::move(what)), timeout_(timeout), rank_(rank) {}
  bool test() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    const int code = MPI_Test(&req_, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) collective_failed = true;
    check_mpi(code, what_.c_str());
    return done != 0;
  }
  void wait() override {
    if (req_ != MPI_REQUEST_NULL) wait_request(req_, what_, timeout_, rank_);
  }

 private:
  MPI_Request req_;
  std::string what_;
  std::chrono::milliseconds timeout_;
  int rank_;
};

class MpiProcessGroup final : public ProcessGroup {
 public:
  explicit MpiProcessGroup(const ProcessGroupOptions& options) : ProcessGroup(options) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = 0;
    MPI_Get_processor_name(name, &length);
    host_.assign(name, length);
    MPI_Comm local;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type");
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    // The exit barrier gets a communicator of its own: on MPI_COMM_WORLD it could match a
    // collective another rank is still waiting in.
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &exit_comm_), "MPI_Comm_dup");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  std::string host() const override { return host_; }

  void broadcast(const Tensor& t, int root) override {
    check<DistributedError>(t.is_contiguous(),
                            "broadcast: expected a contiguous tensor, got shape ", t.sizes(),
                            " strides ", t.strides());
    check<DistributedError>(root >= 0 && root < size_, "broadcast: root ", root,
                            " is not a rank of a group of ", size_);
    MPI_Request req;
    const int bytes = checked_count(t.numel() * t.element_size(), "broadcast");
    check_mpi(MPI_Ibcast(t.data_ptr(), bytes, MPI_BYTE, root, MPI_COMM_WORLD, &req), "MPI_Ibcast");
    wait_request(req, "broadcast of " + std::to_string(bytes) + " bytes", options_.timeout, rank_);
    t.bump_version();
  }

  void allreduce_sum(const Tensor& t) override { allreduce_sum_async(t)->wait(); }

  std::unique_ptr<Work> allreduce_sum_async(const Tensor& t) override {
    const MPI_Datatype type = reduce_type(t, "allreduce_sum");
    const int count = checked_count(t.numel(), "allreduce_sum");
    MPI_Request req;
    check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), count, type, MPI_SUM, MPI_COMM_WORLD, &req),
        "MPI_Iallreduce");
    t.bump_version();
    return std::make_unique<MpiWork>(
        req, "all-reduce of " + std::to_string(count * t.element_size()) + " bytes",
        options_.timeout, rank_);
  }

  bool all_equal(uint64_t value) override {
    // max(v) == v and max(~v) == ~v on every rank <=> all v are equal.
    uint64_t both[2] = {value, ~value};
    MPI_Request req;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &req),
              "MPI_Iallreduce");
    wait_request(req, "all_equal", options_.timeout, rank_);
    return both[0] == value && both[1] == ~value;
  }

  void barrier() override {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
    wait_request(req, "barrier", options_.timeout, rank_);
  }

  // At exit: returns once every rank is exiting (then MPI_Finalize is safe); aborts the job if
  // they do not all arrive within the timeout, or if a collective failed before.
  void wait_for_all_at_exit() {
    if (collective_failed) {
      abort("exiting after a collective failed or timed out, without waiting for the others", 1);
    }
    bool all_arrived = false;
    try {
      MPI_Request req;
      check_mpi(MPI_Ibarrier(exit_comm_, &req), "MPI_Ibarrier");
      all_arrived = poll_until_done(req, "exit barrier", options_.timeout);
    } catch (const DistributedError& e) {
      abort(std::string("exiting: ") + e.what(), 1);
    }
    if (!all_arrived) {
      abort("exiting, but the other ranks did not all reach exit within " +
                std::to_string(options_.timeout.count()) +
                " ms (still working, waiting in a collective, or gone)",
            1);
    }
  }

  [[noreturn]] void abort(const std::string& message, int code) override {
    std::fprintf(stderr, "aclgrad: rank %d on %s: %s; aborting the job\n", rank_, host_.c_str(),
                 message.c_str());
    std::fflush(stderr);
    aborting = true;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; in case it does
  }

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::string host_;
  MPI_Comm exit_comm_ = MPI_COMM_NULL;
};

std::shared_ptr<ProcessGroup>& world() {
  static std::shared_ptr<ProcessGroup> group;
  return group;
}

// Runs when a rank returns from main or calls std::exit. MPI_Finalize at once would race: a rank
// still in a collective times out and calls MPI_Abort, and OpenMPI 4.1.4's mpirun, seeing one
// rank finalize and another abort, sometimes hangs with every rank gone, or crashes (a plain-MPI
// program does it too). So a leaving rank stays alive at a
// barrier until every rank is leaving, then finalizes; if the others do not come within the
// timeout it aborts, and if another rank aborts first mpirun ends this one. Either way mpirun
// sees aborts only, or finalizes on every rank (but for a rank that arrives within one poll of
// another's deadline).
void finalize_at_exit() {
  if (aborting) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (auto* group = dynamic_cast<MpiProcessGroup*>(world().get())) group->wait_for_all_at_exit();
  MPI_Finalize();
}

// An exception nobody caught on a rank would leave the other ranks waiting for it.
void abort_on_terminate() {
  std::string what = "terminate called";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = std::string("uncaught exception: ") + ex.what();
    } catch (...) {
      what = "uncaught exception of unknown type";
    }
  }
  world()->abort(what, 1);
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::init(const ProcessGroupOptions& options) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (world()) return world();
  check<DistributedError>(options.timeout.count() > 0,
                          "ProcessGroup::init: timeout must be "
                          "positive, got ",
                          options.timeout.count(), " ms");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  // Errors come back as codes (turned into DistributedError naming the call), not as an abort
  // from inside the MPI library.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  world() = std::make_shared<MpiProcessGroup>(options);
  std::set_terminate(abort_on_terminate);
  return world();
}

}  // namespace aclgrad::distributed
