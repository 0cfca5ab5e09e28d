// strata-info: what Strata sees on this machine. Each GPU (name, memory, compute capability),
// the peer-access matrix with the performance rank, whether a device_set over all GPUs enabled
// peer access for each pair, and the measured memory bandwidth of each GPU and copy bandwidth and
// latency of every pair's path (strata::measure_topology). `strata-info --json FILE` also writes
// the measured figures as JSON for scripts.
#include <strata/strata.cuh>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  const char* json = nullptr;  // --json FILE: also write the measured figures as JSON
  for (int a = 1; a < argc; ++a)
    if (std::string(argv[a]) == "--json" && a + 1 < argc) json = argv[++a];
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

    // Measured: what the exchange's paths and the devices' memory deliver (strata::measure_topology).
    const strata::topology& t = strata::measure_topology(all);
    std::printf("\nMeasured in %.2f s (copies of 256 MiB, best of 3; latency of a 4-byte copy)\n", t.seconds);
    std::printf("Device memory (copy within the device, read + write):");
    for (std::size_t i = 0; i < t.places(); ++i) std::printf("  GPU%d %.0f GB/s", t.devices[i], t.memory_gbps[i]);
    std::printf("\nCopy bandwidth GB/s / latency us, row -> column (P = peer or same device, H = host staging):\n      ");
    for (std::size_t j = 0; j < t.places(); ++j) std::printf("  GPU%-14d", t.devices[j]);
    std::printf("\n");
    for (std::size_t i = 0; i < t.places(); ++i) {
      std::printf("GPU%-3d", t.devices[i]);
      for (std::size_t j = 0; j < t.places(); ++j)
        std::printf("  %7.0f/%5.1f %s  ", t.copy(i, j), t.latency(i, j), t.direct[i * t.places() + j] ? "P" : "H");
      std::printf("\n");
    }
    if (json) {
      std::FILE* f = std::fopen(json, "w");
      if (f == nullptr) throw std::runtime_error(std::string("cannot write ") + json);
      std::fprintf(f, "{\"strata\": \"%s\", \"seconds\": %.4f, \"devices\": [", STRATA_VERSION_STRING, t.seconds);
      for (std::size_t i = 0; i < t.places(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", t.devices[i]);
      const auto matrix = [&](const char* name, auto&& at) {
        std::fprintf(f, "], \"%s\": [", name);
        for (std::size_t i = 0; i < t.places(); ++i) {
          std::fprintf(f, "%s[", i ? ", " : "");
          for (std::size_t j = 0; j < t.places(); ++j) std::fprintf(f, "%s%.3f", j ? ", " : "", at(i, j));
          std::fprintf(f, "]");
        }
      };
      std::fprintf(f, "], \"memory_gbps\": [");
      for (std::size_t i = 0; i < t.places(); ++i) std::fprintf(f, "%s%.3f", i ? ", " : "", t.memory_gbps[i]);
      matrix("copy_gbps", [&](std::size_t i, std::size_t j) { return t.copy(i, j); });
      matrix("latency_us", [&](std::size_t i, std::size_t j) { return t.latency(i, j); });
      matrix("direct", [&](std::size_t i, std::size_t j) { return static_cast<double>(t.direct[i * t.places() + j]); });
      std::fprintf(f, "]}\n");
      std::fclose(f);
      std::printf("\nJSON written to %s\n", json);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
