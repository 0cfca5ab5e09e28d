// Replay of repeated value-returning calls as CUDA graphs. Host launch overhead, not the GPU,
// sets the latency of small multi-place calls (about 12 us of host time per place when issued
// eagerly); a call repeated with the same ranges, operator state and temp storage is captured
// once (multi-stream capture from the root) and then replayed with one graph launch, updating
// only the root's fold (its initial value and result slot) each time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>

namespace strata::detail {

/// Thrown inside a capture when the work would need something a capture cannot do (temp
/// storage growth); the capture is dropped and the call runs eagerly.
struct capture_abort {};

/// The identity of a call for the graph cache: everything that is baked into the captured
/// kernels (ranges' pointers and counts, operator state, temp storage).
class call_key {
 public:
  template <class T>
  void add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "keys are made of trivially copyable parts");
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void add_type(const std::type_info& t) { bytes_.append(t.name()).push_back('\0'); }
  const std::string& bytes() const noexcept { return bytes_; }

 private:
  std::string bytes_;
};

/// One captured call: the executable graph and its fold node, whose parameters are rewritten
/// on every replay.
struct cached_graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t fold_node = nullptr;
  cudaKernelNodeParams fold_params{};
  cached_graph() = default;
  cached_graph(const cached_graph&) = delete;
  cached_graph& operator=(const cached_graph&) = delete;
  ~cached_graph() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

/// Calls seen once run eagerly; the second identical call is captured; later ones replay. A key
/// whose capture failed (e.g. an API a capture cannot hold) stays eager.
class graph_cache {
 public:
  struct entry {
    int seen = 0;
    bool failed = false;
    std::unique_ptr<cached_graph> graph;
  };
  entry& lookup(const std::string& key) {
    if (map_.size() >= max_entries && map_.find(key) == map_.end()) map_.clear();  // bounded: start over
    return map_[key];
  }
  void clear() noexcept { map_.clear(); }
  /// Drops the entries whose key starts with `prefix`.
  void erase_prefix(const std::string& prefix) noexcept {
    for (auto it = map_.begin(); it != map_.end();)
      it = it->first.compare(0, prefix.size(), prefix) == 0 ? map_.erase(it) : std::next(it);
  }
  std::uint64_t replays = 0;   ///< graph launches served (tests read it)
  std::uint64_t captures = 0;  ///< graphs captured

 private:
  static constexpr std::size_t max_entries = 128;
  std::unordered_map<std::string, entry> map_;
};

}  // namespace strata::detail
