// vmm_probe.cc: what the CUDA driver says about VMM (cuMemCreate) memory, and
// what passing such memory to another process by POSIX fd costs. It measured
// the design of the cuda_vmm transport (docs/gpu-transport-protocol.md 13):
//   - the pointer attributes an exporter can use to find the physical
//     allocations under a tensor (mapping base and size, allowed handle types)
//     and whether the driver's buffer id names one allocation for the life of
//     the process (a freed and re-created chunk mapped at the same address);
//   - the cost of retaining a handle and exporting it as an fd, of importing
//     and mapping it in another process, and of the pointer-attribute query.
// Build and run on a GPU machine:
//   g++-12 -O2 -std=c++20 vmm_probe.cc -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcuda -o vmm_probe
//   ./vmm_probe
#include <cuda.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define DK(x)                                                 \
  do {                                                        \
    CUresult dk_r = (x);                                      \
    if (dk_r != CUDA_SUCCESS) {                               \
      const char* dk_s = nullptr;                             \
      cuGetErrorString(dk_r, &dk_s);                          \
      std::printf("%s: %d %s\n", #x, dk_r, dk_s ? dk_s : ""); \
      std::exit(1);                                           \
    }                                                         \
  } while (0)

using Clock = std::chrono::steady_clock;
static double Us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

static void SendFds(int socket, const std::vector<int>& fds) {
  char byte = 'f';
  iovec io{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  if (sendmsg(socket, &msg, 0) != 1) std::perror("sendmsg");
}

static std::vector<int> ReceiveFds(int socket, size_t count) {
  char byte = 0;
  iovec io{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * count));
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  if (recvmsg(socket, &msg, 0) != 1) std::perror("recvmsg");
  std::vector<int> fds(count, -1);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c != nullptr) std::memcpy(fds.data(), CMSG_DATA(c), sizeof(int) * count);
  return fds;
}

static void Describe(const char* what, CUdeviceptr p) {
  unsigned long long buffer_id = 0;
  CUdeviceptr range_start = 0, mapping_base = 0;
  size_t range_size = 0, mapping_size = 0;
  unsigned long long allowed = 0;
  int legacy = -1;
  unsigned long long block_id = 0;
  CUpointer_attribute a[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,      CU_POINTER_ATTRIBUTE_BUFFER_ID,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,     CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,    CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
      CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  void* v[] = {&block_id,     &buffer_id,    &range_start, &range_size,
               &mapping_base, &mapping_size, &allowed,     &legacy};
  CUresult r = cuPointerGetAttributes(8, a, v, p);
  std::printf(
      "%-28s r=%d block=%llu buffer_id=%llu range=+%lld/%zu mapping=+%lld/%zu allowed=%llx legacy=%d\n", what,
      r, block_id, buffer_id, (long long)(range_start - p), range_size, (long long)(mapping_base - p),
      mapping_size, allowed, legacy);
}

static int Child(int socket) {
  DK(cuInit(0));
  CUdevice dev;
  DK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  DK(cuDevicePrimaryCtxRetain(&ctx, dev));
  DK(cuCtxSetCurrent(ctx));
  size_t sizes[2];
  if (read(socket, sizes, sizeof sizes) != sizeof sizes) return 1;
  const size_t piece = sizes[0], count = sizes[1];
  std::vector<int> fds = ReceiveFds(socket, count);
  auto t0 = Clock::now();
  std::vector<CUmemGenericAllocationHandle> handles(count);
  for (size_t i = 0; i < count; ++i) {
    DK(cuMemImportFromShareableHandle(&handles[i], reinterpret_cast<void*>(static_cast<uintptr_t>(fds[i])),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  }
  const double import_us = Us(t0);
  t0 = Clock::now();
  CUdeviceptr base = 0;
  DK(cuMemAddressReserve(&base, piece * count, 0, 0, 0));
  for (size_t i = 0; i < count; ++i) DK(cuMemMap(base + i * piece, piece, 0, handles[i], 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DK(cuMemSetAccess(base, piece * count, &access, 1));
  const double map_us = Us(t0);
  std::vector<unsigned char> host(piece * count);
  DK(cuMemcpyDtoH(host.data(), base, host.size()));
  bool exact = true;
  for (size_t i = 0; i < count; ++i)
    exact = exact && host[i * piece] == static_cast<unsigned char>(i + 1) &&
            host[i * piece + piece - 1] == static_cast<unsigned char>(i + 1);
  // Importing the same fd again: the same handle?
  CUmemGenericAllocationHandle again = 0;
  DK(cuMemImportFromShareableHandle(&again, reinterpret_cast<void*>(static_cast<uintptr_t>(fds[0])),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  Describe("child: imported mapping", base);
  t0 = Clock::now();
  DK(cuMemUnmap(base, piece * count));
  DK(cuMemAddressFree(base, piece * count));
  for (auto h : handles) DK(cuMemRelease(h));
  const double unmap_us = Us(t0);
  DK(cuMemRelease(again));
  for (int fd : fds) close(fd);
  std::printf(
      "child: %zu pieces of %zu: import %.1f us, reserve+map+access %.1f us, unmap+free+release %.1f us, "
      "values %s, reimport same handle %s\n",
      count, piece, import_us, map_us, unmap_us, exact ? "exact" : "WRONG",
      again == handles[0] ? "yes" : "no");
  return exact ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "child") return Child(std::atoi(argv[2]));
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
  const pid_t child = fork();  // before cuInit: the child execs and starts its own CUDA
  if (child == 0) {
    close(pair[0]);
    execl("/proc/self/exe", argv[0], "child", std::to_string(pair[1]).c_str(), nullptr);
    _exit(127);
  }
  close(pair[1]);
  DK(cuInit(0));
  CUdevice dev;
  DK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  DK(cuDevicePrimaryCtxRetain(&ctx, dev));
  DK(cuCtxSetCurrent(ctx));

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  DK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t piece = 10 * granularity;  // 20 MiB, as torch's expandable segments
  constexpr size_t kPieces = 4;
  CUdeviceptr base = 0;
  DK(cuMemAddressReserve(&base, piece * (kPieces + 1), 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles(kPieces);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (size_t i = 0; i < kPieces; ++i) {
    DK(cuMemCreate(&handles[i], piece, &prop, 0));
    DK(cuMemMap(base + i * piece, piece, 0, handles[i], 0));
    DK(cuMemSetAccess(base + i * piece, piece, &access, 1));
    DK(cuMemsetD8(base + i * piece, static_cast<unsigned char>(i + 1), piece));
  }
  std::printf("granularity %zu, piece %zu\n", granularity, piece);
  Describe("piece 0 start", base);
  Describe("piece 0 + 1000", base + 1000);
  Describe("piece 1 start", base + piece);
  Describe("piece 3 end - 1", base + 4 * piece - 1);
  Describe("unmapped tail", base + 4 * piece + 10);
  CUmemGenericAllocationHandle retained = 0;
  DK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + piece + 100)));
  std::printf("retained handle of piece 1 %s the created one\n",
              retained == handles[1] ? "equals" : "differs from");
  DK(cuMemRelease(retained));

  // A chunk freed and created again at the same address: a new buffer id?
  DK(cuMemUnmap(base + piece, piece));
  DK(cuMemRelease(handles[1]));
  const CUmemGenericAllocationHandle old_handle = handles[1];
  DK(cuMemCreate(&handles[1], piece, &prop, 0));
  DK(cuMemMap(base + piece, piece, 0, handles[1], 0));
  DK(cuMemSetAccess(base + piece, piece, &access, 1));
  DK(cuMemsetD8(base + piece, 2, piece));
  Describe("piece 1 re-created", base + piece);
  std::printf("re-created handle value %s the old one\n",
              handles[1] == old_handle ? "EQUALS" : "differs from");

  // Costs on the exporter's side.
  constexpr int kRounds = 1000;
  auto t0 = Clock::now();
  for (int i = 0; i < kRounds; ++i) {
    unsigned long long id = 0;
    CUdeviceptr mb = 0;
    size_t ms = 0;
    unsigned long long allowed = 0;
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                               CU_POINTER_ATTRIBUTE_MAPPING_SIZE, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES};
    void* v[] = {&id, &mb, &ms, &allowed};
    DK(cuPointerGetAttributes(4, a, v, base + piece * (i % kPieces)));
  }
  std::printf("cuPointerGetAttributes(4): %.2f us\n", Us(t0) / kRounds);
  t0 = Clock::now();
  for (int i = 0; i < kRounds; ++i) {
    CUmemGenericAllocationHandle h = 0;
    DK(cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(base + piece * (i % kPieces))));
    int fd = -1;
    DK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    DK(cuMemRelease(h));
  }
  std::printf("retain + export fd + close + release: %.2f us\n", Us(t0) / kRounds);

  std::vector<int> fds;
  for (size_t i = 0; i < kPieces; ++i) {
    int fd = -1;
    DK(cuMemExportToShareableHandle(&fd, handles[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    fds.push_back(fd);
  }
  size_t sizes[2] = {piece, kPieces};
  if (write(pair[0], sizes, sizeof sizes) != sizeof sizes) return 1;
  SendFds(pair[0], fds);
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exit %d\n", WEXITSTATUS(status));
  return WEXITSTATUS(status);
}
