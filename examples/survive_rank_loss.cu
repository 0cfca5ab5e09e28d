// Survivors carry on after a rank dies. The program is its own launcher: it starts itself again as
// `ranks` rank processes (default 3) on one ncclUniqueId and watches them. The ranks make a set
// spanning them and a range of 10^6 integers over it; the last rank dies (SIGKILL, as the
// out-of-memory killer or a failed node would) instead of joining a reduce. The others get
// strata::nccl_error within their timeout (5 s here), learn from the launcher which rank died (it
// saw the process end: Strata cannot know), and then:
//   1. strata::lost_ranges     which global elements were on the dead rank;
//   2. process_group::shrink   a new group of the survivors (NCCL's ncclCommShrink);
//   3. strata::salvage         their elements moved onto a set spanning the new group;
//   4. and carry on: a reduce and a sort over the new group.
//
//   ./build/examples/survive_rank_loss [ranks]
//
// Ranks share GPU 0 where there are fewer GPUs than ranks: that needs NCCL 2.30+ (it is run with
// NCCL_MULTI_RANK_GPU_ENABLE=1); with an older NCCL the program says so and stops. Needs
// Strata::nccl; see docs/errors.md, "A rank that dies".
#include <strata/nccl.cuh>
#include <strata/strata.cuh>

#include <cuda/functional>
#include <cuda/std/functional>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

std::string to_hex(const ncclUniqueId& id) {
  std::string s;
  char two[3];
  for (const char c : id.internal) {
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(c));
    s += two;
  }
  return s;
}

ncclUniqueId from_hex(const std::string& hex) {
  ncclUniqueId id{};
  for (std::size_t b = 0; b < sizeof id.internal; ++b)
    id.internal[b] = static_cast<char>(std::stoi(hex.substr(2 * b, 2), nullptr, 16));
  return id;
}

// One rank. Its stdin is a pipe from the launcher, which writes the number of a rank that died.
int rank_main(int rank, int ranks, const ncclUniqueId& id) {
  const int gpus = strata::visible_device_count();
  const std::uint64_t n = 1'000'000;
  std::vector<std::int64_t> h(n);
  std::iota(h.begin(), h.end(), std::int64_t{1});
  auto group = strata::process_group::create(id, rank, ranks, rank % gpus);
  group.set_timeout(std::chrono::seconds(5));
  const strata::device_set set = strata::spanning_set(group, 2);  // two places per rank
  strata::distributed_vector<std::int64_t> x(h, set);               // each rank holds its share

  const std::int64_t sum = strata::reduce(x);  // every rank joins
  std::printf("rank %d: sum of all %llu elements = %lld\n", rank, static_cast<unsigned long long>(n),
              static_cast<long long>(sum));
  std::fflush(stdout);
  if (rank == ranks - 1) std::raise(SIGKILL);  // the last rank dies instead of joining the next reduce

  const auto start = std::chrono::steady_clock::now();
  try {
    (void)strata::reduce(x);
    std::printf("rank %d: the reduce finished without the dead rank?\n", rank);
    return 1;
  } catch (const strata::nccl_error& e) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: strata::nccl_error after %.0f ms: %s\n", rank, ms, e.what());
  }
  // Which rank died: the launcher says (a job scheduler, a health check or the launcher would in a
  // real job).
  int dead = -1;
  if (std::scanf("%d", &dead) != 1) {
    std::printf("rank %d: the launcher did not say which rank died\n", rank);
    return 1;
  }
  const std::vector<int> lost{dead};
  for (const strata::index_range& r : strata::lost_ranges(x, lost))
    std::printf("rank %d: rank %d's death lost elements [%llu, %llu)\n", rank, dead,
                static_cast<unsigned long long>(r.offset), static_cast<unsigned long long>(r.offset + r.count));

  const strata::process_group survivors = group.shrink(lost);          // every survivor calls it
  const strata::device_set set2 = strata::spanning_set(survivors, 2);  // the old group is retired
  strata::distributed_vector<std::int64_t> kept = strata::salvage(x, lost, set2);

  const std::int64_t kept_sum = strata::reduce(kept);
  strata::sort(kept, cuda::std::greater<std::int64_t>{});
  // Collectives, as everything on a set spanning processes (get(0) would read rank 0's element:
  // only rank 0 may).
  const bool sorted = strata::is_sorted(kept, cuda::std::greater<std::int64_t>{});
  const std::int64_t largest = strata::reduce(kept, std::numeric_limits<std::int64_t>::min(), cuda::maximum<>{});
  std::int64_t expected = 0, expected_largest = std::numeric_limits<std::int64_t>::min();  // the host's
  std::vector<char> gone(n, 0);
  for (const strata::index_range& r : strata::lost_ranges(x, lost))
    for (std::uint64_t i = r.offset; i < r.offset + r.count; ++i) gone[i] = 1;
  for (std::uint64_t i = 0; i < n; ++i)
    if (!gone[i]) {
      expected += h[i];
      expected_largest = std::max(expected_largest, h[i]);
    }
  std::printf("rank %d is now rank %d of %d: %llu elements kept, sum %lld (expected %lld), largest %lld (expected "
              "%lld), sorted in descending order: %s\n",
              rank, survivors.rank(), survivors.size(), static_cast<unsigned long long>(kept.size()),
              static_cast<long long>(kept_sum), static_cast<long long>(expected), static_cast<long long>(largest),
              static_cast<long long>(expected_largest), sorted ? "yes" : "no");
  return kept_sum == expected && largest == expected_largest && sorted ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (const char* r = std::getenv("SURVIVE_RANK")) {  // a rank process
      return rank_main(std::atoi(r), std::atoi(std::getenv("SURVIVE_RANKS")), from_hex(std::getenv("SURVIVE_ID")));
    }
    const int ranks = argc > 1 ? std::atoi(argv[1]) : 3;
    if (ranks < 2) {
      std::printf("survive_rank_loss: give at least 2 ranks\n");
      return 1;
    }
    const int gpus = strata::visible_device_count();
    if (gpus == 0) {
      std::printf("No CUDA device is visible\n");
      return 0;
    }
    if (gpus < ranks && strata::nccl_version() < 23000) {
      std::printf("survive_rank_loss: %d ranks on %d GPU(s) need NCCL 2.30+ (loaded: %d): not run\n", ranks, gpus,
                  strata::nccl_version());
      return 0;
    }
    // The launcher: start the ranks, each with a pipe on its stdin.
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    const std::string id = to_hex(strata::nccl_unique_id());
    std::vector<pid_t> pids(static_cast<std::size_t>(ranks));
    std::vector<int> to_rank(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      int fd[2];
      if (pipe(fd) != 0) return 1;
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, fd[0], 0);
      posix_spawn_file_actions_addclose(&actions, fd[1]);
      std::vector<std::string> env;
      for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
      env.push_back("SURVIVE_RANK=" + std::to_string(r));
      env.push_back("SURVIVE_RANKS=" + std::to_string(ranks));
      env.push_back("SURVIVE_ID=" + id);
      std::vector<char*> envp;
      for (auto& e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      std::string self = "/proc/self/exe";
      char* args[] = {self.data(), nullptr};
      const int spawned = posix_spawn(&pids[static_cast<std::size_t>(r)], "/proc/self/exe", &actions, nullptr, args,
                                      envp.data());
      posix_spawn_file_actions_destroy(&actions);
      close(fd[0]);
      if (spawned != 0) return 1;
      to_rank[static_cast<std::size_t>(r)] = fd[1];
    }
    // Watch them: when one dies of a signal, tell the others which.
    int failures = 0, left = ranks;
    while (left > 0) {
      int st = 0;
      const pid_t pid = wait(&st);
      if (pid < 0) break;
      --left;
      int r = 0;
      while (r < ranks && pids[static_cast<std::size_t>(r)] != pid) ++r;
      if (WIFSIGNALED(st)) {
        std::printf("launcher: rank %d died (signal %d)\n", r, WTERMSIG(st));
        const std::string word = std::to_string(r) + "\n";
        for (int q = 0; q < ranks; ++q)
          if (q != r) (void)!write(to_rank[static_cast<std::size_t>(q)], word.data(), word.size());
        failures += r == ranks - 1 ? 0 : 1;  // only the last rank was meant to die
      } else {
        std::printf("launcher: rank %d exited with %d\n", r, WEXITSTATUS(st));
        failures += WEXITSTATUS(st) != 0 ? 1 : 0;
      }
      std::fflush(stdout);
    }
    for (const int fd : to_rank) close(fd);
    std::printf(failures == 0 ? "the survivors carried on\n" : "survive_rank_loss FAILED\n");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("survive_rank_loss: %s\n", e.what());
    return 1;
  }
}
