// strata-info: what Strata sees on this machine. Each GPU (name, memory, compute capability),
// the peer-access matrix with the performance rank, and whether a device_set over all GPUs
// enabled peer access for each pair.
#include <strata/strata.cuh>

#include <cstdio>
#include <exception>

int main() {
  std::printf("Strata %s\n", STRATA_VERSION_STRING);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("CUDA driver %d.%d, runtime %d.%d\n", driver / 1000, (driver % 1000) / 10, runtime / 1000,
              (runtime % 1000) / 10);
  const int n = strata::visible_device_count();
  if (n == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  try {
    std::printf("\n%-4s %-28s %10s %8s %6s %10s\n", "GPU", "name", "memory", "cc", "SMs", "PCI bus");
    for (int d = 0; d < n; ++d) {
      cudaDeviceProp p{};
      STRATA_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
      std::printf("%-4d %-28s %7.1f GiB %6d.%d %6d   %04x:%02x:%02x\n", d, p.name,
                  static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), p.major, p.minor,
                  p.multiProcessorCount, p.pciDomainID, p.pciBusID, p.pciDeviceID);
    }
    const auto all = strata::device_set::all();
    std::printf("\nPeer access (row reads column): rank = cudaDevP2PAttrPerformanceRank, "
                "E = enabled by strata::device_set::all(), - = no peer path\n      ");
    for (int b = 0; b < n; ++b) std::printf("  GPU%-3d", b);
    std::printf("\n");
    for (int a = 0; a < n; ++a) {
      std::printf("GPU%-3d", a);
      for (int b = 0; b < n; ++b) {
        if (a == b) {
          std::printf("  %-6s", "self");
          continue;
        }
        int can = 0;
        STRATA_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
        if (!can) {
          std::printf("  %-6s", "-");
          continue;
        }
        int rank = 0;
        STRATA_CUDA_CHECK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b));
        char cell[16];
        std::snprintf(cell, sizeof cell, "%d%s", rank, all.peer_access_enabled(a, b) ? " E" : "");
        std::printf("  %-6s", cell);
      }
      std::printf("\n");
    }
    std::printf("\nHost staging forced: %s\n", all.host_staging_forced() ? "yes (STRATA_DISABLE_P2P)" : "no");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
