#include "actorflow/comm/same_host.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace actorflow {

const ProcessProof& ThisProcessProof() {
  static const ProcessProof proof = [] {
    // The cookie stays where the proof says for the life of the process.
    static std::array<uint8_t, 16> cookie;
    std::random_device rd;
    for (size_t i = 0; i < cookie.size(); i += 4) {
      const uint32_t r = rd();
      std::memcpy(cookie.data() + i, &r, 4);
    }
    ProcessProof p;
    p.pid = static_cast<uint32_t>(::getpid());
    p.address = reinterpret_cast<uint64_t>(cookie.data());
    p.cookie = cookie;
    return p;
  }();
  return proof;
}

std::unique_ptr<PeerMemory> PeerMemory::Attach(const ProcessProof& proof) {
#ifdef SYS_pidfd_open
  if (proof.pid == 0 || proof.address == 0) return nullptr;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(proof.pid), 0));
  if (fd < 0) return nullptr;  // no such process here, or a kernel without pidfds (< 5.3)
  std::unique_ptr<PeerMemory> peer(new PeerMemory(proof.pid, fd));
  std::array<uint8_t, 16> seen{};
  if (!peer->Read(proof.address, seen.data(), seen.size()).ok() || seen != proof.cookie || peer->Exited())
    return nullptr;
  return peer;
#else
  (void)proof;
  return nullptr;
#endif
}

PeerMemory::~PeerMemory() { ::close(pidfd_); }

Status PeerMemory::Read(uint64_t address, void* dest, size_t len) const {
  char* to = static_cast<char*>(dest);
  while (len > 0) {
    iovec local{to, len};
    iovec remote{reinterpret_cast<void*>(address), len};
    const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid_), &local, 1, &remote, 1, 0);
    const int err = n < 0 ? errno : 0;
    if (n > 0) {
      to += n;
      address += static_cast<uint64_t>(n);
      len -= static_cast<size_t>(n);
      continue;
    }
    if (err == EINTR) continue;
    if (err == ESRCH) return errors::Unavailable("process ", pid_, " is gone");
    // EFAULT (or a short read that ends at an unmapped page), EPERM.
    char at[24];
    std::snprintf(at, sizeof at, "0x%llx", static_cast<unsigned long long>(address));
    return errors::DataLoss("cannot read ", len, " bytes at ", at, " of process ", pid_, ": ",
                            err != 0 ? std::strerror(err) : "not mapped");
  }
  return Status::OK();
}

bool PeerMemory::Exited() const {
  pollfd p{pidfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;  // a pidfd is readable once its process has exited
}

}  // namespace actorflow
