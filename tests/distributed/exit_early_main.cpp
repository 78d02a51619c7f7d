// exit_early: rank 1 leaves the job normally while rank 0 is still busy, to check that the job
// always ends by itself, with the right status (exit_early_test.sh runs it dozens of times, each
// under a time limit, because the failure it guards against came 1 run in 10-20).
//
//   mpirun -np 2 exit_early return     rank 1 returns from main; rank 0 waits in an all-reduce,
//                                      times out after 300 ms and aborts: exit 3
//   mpirun -np 2 exit_early exit       the same with std::exit(0) deep in a call
//   mpirun -np 2 exit_early same       as return, but both ranks wait 300 ms: whichever aborts
//                                      first, exit 1 or 3
//   mpirun -np 2 exit_early late       rank 1 returns; rank 0 works 300 ms and returns: exit 0
//   mpirun -np 2 exit_early alone      rank 1 returns; rank 0 works for a minute: rank 1 waits
//                                      300 ms for it at exit, then aborts: exit 1
//   mpirun -np 2 exit_early timed-out  rank 1 returns; rank 0's all-reduce times out and rank 0
//                                      returns from main: it must abort at exit: exit 1
//
// But in `same` (every rank's timeout the same, as in a real job), the rank that waits gets a
// 300 ms timeout and the other 20 s, so which rank aborts is known. With ACLGRAD_TEST_PID_DIR
// set, each rank writes its pid to rank<R>.pid there (for the cleanup of a launch that hangs).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include "nn/distributed/process_group.h"
#include "tensor/creation.h"

using namespace aclgrad;

namespace {

// The rank from the launcher's environment: the timeout is an option of init().
int launcher_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank ? std::atoi(rank) : 0;
}

void write_pid_file(int rank) {
  const char* dir = std::getenv("ACLGRAD_TEST_PID_DIR");
  if (!dir) return;
  const std::string path = std::string(dir) + "/rank" + std::to_string(rank) + ".pid";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%ld\n", static_cast<long>(getpid()));
    std::fclose(f);
  }
}

[[noreturn]] void leave_from_deep_inside(int depth) {
  if (depth == 0) std::exit(0);
  leave_from_deep_inside(depth - 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "return";
  if (mode != "return" && mode != "exit" && mode != "same" && mode != "late" && mode != "alone" &&
      mode != "timed-out") {
    std::fprintf(stderr, "exit_early: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  const int waiting_rank = mode == "alone" ? 1 : 0;
  const bool short_wait = mode == "same" || launcher_rank() == waiting_rank;
  auto group = distributed::ProcessGroup::init(
      {.timeout = short_wait ? std::chrono::milliseconds(300) : std::chrono::seconds(20)});
  write_pid_file(group->rank());
  if (group->rank() != 0) {
    std::printf("rank %d leaving\n", group->rank());
    std::fflush(stdout);
    if (mode == "exit") leave_from_deep_inside(3);
    return 0;
  }
  if (mode == "late") {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  } else if (mode == "alone") {
    std::this_thread::sleep_for(std::chrono::minutes(1));
  } else {
    Tensor t = ones({2}, Dtype::Float32);  // 8 bytes
    try {
      group->allreduce_sum(t);
    } catch (const distributed::DistributedError& e) {
      if (mode != "timed-out") group->abort(std::string("error: ") + e.what(), 3);
    }
  }
  std::printf("rank 0 leaving\n");
  return 0;
}
