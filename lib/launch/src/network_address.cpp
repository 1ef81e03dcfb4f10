#include "burst/launch/network_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::launch {
namespace {

std::vector<std::string> host_interfaces() {
  std::vector<std::string> names;
  struct if_nameindex* list = ::if_nameindex();
  if (list == nullptr) return names;
  for (struct if_nameindex* entry = list; entry->if_index != 0 || entry->if_name != nullptr; ++entry) {
    names.emplace_back(entry->if_name);
  }
  ::if_freenameindex(list);
  return names;
}

struct AddressListDeleter {
  void operator()(addrinfo* list) const { ::freeaddrinfo(list); }
};
using AddressList = std::unique_ptr<addrinfo, AddressListDeleter>;

AddressList resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int code = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  if (code != 0) throw RunFailure(fmt::format("cannot resolve the master address '{}': {}", host, ::gai_strerror(code)));
  return AddressList(found);
}

std::string numeric(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST];
  if (::getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return host;
}

}  // namespace

std::vector<std::string> socket_interfaces(const std::string& value) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin <= value.size()) {
    const size_t end = std::min(value.find(',', begin), value.size());
    names.push_back(value.substr(begin, end - begin));
    begin = end + 1;
  }
  for (const std::string& name : names) {
    if (!name.empty() && ::if_nametoindex(name.c_str()) != 0) continue;
    throw UserError(fmt::format("{}={}: this host has no interface '{}' (it has: {})", kGlooSocketInterfaceVariable,
                                value, name, fmt::join(host_interfaces(), ", ")));
  }
  return names;
}

bool is_loopback_address(const std::string& address) {
  if (address == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::string local_address_towards(const std::string& master) {
  const AddressList list = resolve(master);
  std::string reason = "no address";
  for (const addrinfo* entry = list.get(); entry != nullptr; entry = entry->ai_next) {
    const int fd = ::socket(entry->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    const bool routed = ::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 &&
                        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    if (!routed) reason = std::strerror(errno);
    ::close(fd);
    if (routed) {
      const std::string address = numeric(reinterpret_cast<sockaddr*>(&local), length);
      if (!address.empty()) return address;
    }
  }
  throw RunFailure(fmt::format("no local address reaches the master address '{}': {}", master, reason));
}

}  // namespace burst::launch
