#pragma once
// Which local address a rank's sockets bind, for runs across hosts (torch's rules): the
// interfaces GLOO_SOCKET_IFNAME names, else the address this host reaches MASTER_ADDR from,
// never loopback when the master is on another host. libtorch-free; POSIX (Linux).
#include <string>
#include <vector>

namespace burst::launch {

// The variable that names the interfaces Gloo's sockets use, comma-separated (as torch's).
inline constexpr const char* kGlooSocketInterfaceVariable = "GLOO_SOCKET_IFNAME";

// The names in a GLOO_SOCKET_IFNAME value ("eth0,eth1"), each an interface of this host.
// UserError naming the variable, the missing interface and this host's interfaces when one
// does not exist, or for an empty name.
std::vector<std::string> socket_interfaces(const std::string& value);

// Whether `address` (a host name or a numeric address) names this host's loopback.
bool is_loopback_address(const std::string& address);

// The numeric local address (IPv4 or IPv6) of the interface this host would use to reach
// `master`: resolve it, point a UDP socket at it (nothing is sent) and read the socket's
// own address. RunFailure naming `master` when it does not resolve or no route reaches it.
std::string local_address_towards(const std::string& master);

}  // namespace burst::launch
