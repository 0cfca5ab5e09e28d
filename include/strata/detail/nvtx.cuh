// A named NVTX range per Strata call, so Strata shows up in Nsight Systems.
#pragma once

#if __has_include(<nvtx3/nvToolsExt.h>) && !defined(STRATA_DISABLE_NVTX)
#include <nvtx3/nvToolsExt.h>
#define STRATA_DETAIL_HAS_NVTX 1
#endif

namespace strata::detail {

/// Pushes a named NVTX range for its lifetime (no-op where NVTX is unavailable).
class nvtx_range {
 public:
  explicit nvtx_range(const char* name) noexcept {
#ifdef STRATA_DETAIL_HAS_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;
  ~nvtx_range() {
#ifdef STRATA_DETAIL_HAS_NVTX
    nvtxRangePop();
#endif
  }
};

}  // namespace strata::detail
