// How many threads the pool starts with: the physical cores this process may actually use.
// - Linux: the logical CPUs in the process's affinity mask (taskset, cpusets, container pinning),
//   grouped into physical cores by their sysfs topology ids (SMT siblings count once), then capped by
//   a cgroup CPU quota (`docker run --cpus=N`, Kubernetes limits), v2 `cpu.max` or v1 `cfs_quota_us`.
//   Counting every core of the host instead would oversubscribe a container: N spinning workers
//   sharing a quota of 2 CPUs make every parallel region wait for descheduled threads.
// - macOS: hw.physicalcpu. Windows: processor cores from GetLogicalProcessorInformationEx.
// - Anything else, or when detection fails: std::thread::hardware_concurrency().
#include "threadpool.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#if defined(__linux__)
#include <sched.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#elif defined(_WIN32)
#include "win32.h"
#endif

namespace mlx {
namespace {

#if defined(__linux__)
// First integer in a small text file, or `fallback`.
long read_long(const std::string& path, long fallback) {
  std::ifstream f(path);
  long v;
  return (f >> v) ? v : fallback;
}

// CPUs allowed by a cgroup quota (rounded up), or 0 when there is none.
int cgroup_cpu_limit() {
  {  // cgroup v2: "max 100000" or "200000 100000"
    std::ifstream f("/sys/fs/cgroup/cpu.max");
    std::string quota;
    long period = 0;
    if (f >> quota >> period) {
      if (quota == "max" || period <= 0) return 0;
      const long q = std::atol(quota.c_str());
      return q > 0 ? int(std::max<long>(1, (q + period - 1) / period)) : 0;
    }
  }
  const long q = read_long("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", -1);  // cgroup v1; -1 = unlimited
  const long p = read_long("/sys/fs/cgroup/cpu/cpu.cfs_period_us", 0);
  return q > 0 && p > 0 ? int(std::max<long>(1, (q + p - 1) / p)) : 0;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  std::set<std::pair<long, long>> cores;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    const std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    const long pkg = read_long(topo + "physical_package_id", 0);
    const long core = read_long(topo + "core_id", -1);
    // Without topology information each logical CPU counts as a core.
    cores.insert({pkg, core >= 0 ? core : (1L << 40) + c});
  }
  int n = int(cores.size());
  const int limit = cgroup_cpu_limit();
  if (n > 0 && limit > 0) n = std::min(n, limit);
  return n;
}
#elif defined(__APPLE__)
int usable_cores() {
  int n = 0;
  size_t len = sizeof n;
  return sysctlbyname("hw.physicalcpu", &n, &len, nullptr, 0) == 0 ? n : 0;
}
#elif defined(_WIN32)
int usable_cores() {
  DWORD len = 0;
  GetLogicalProcessorInformationEx(RelationProcessorCore, nullptr, &len);
  if (GetLastError() != ERROR_INSUFFICIENT_BUFFER || len == 0) return 0;
  std::vector<char> buf(len);
  auto* info = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buf.data());
  if (!GetLogicalProcessorInformationEx(RelationProcessorCore, info, &len)) return 0;
  int n = 0;
  for (DWORD off = 0; off < len;) {
    auto* e = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buf.data() + off);
    if (e->Relationship == RelationProcessorCore) n++;
    off += e->Size;
  }
  return n;
}
#else
int usable_cores() { return 0; }
#endif

}  // namespace

int physical_cores() {
  const int n = usable_cores();
  if (n > 0) return n;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc ? int(hc) : 1;
}

}  // namespace mlx
