// What the launcher asks of the local system: a free port, this program's path.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "burst/launch/spawn.h"

namespace burst::launch {

int pick_free_port() {
  const int socket_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel picks an unused ephemeral port
  socklen_t length = sizeof(address);
  if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(socket_fd);
    throw std::system_error(error, std::generic_category(), "binding a loopback port");
  }
  close(socket_fd);
  return ntohs(address.sin_port);
}

std::string current_executable() {
  std::string path(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size());
  if (length <= 0 || static_cast<size_t>(length) >= path.size()) {
    const int error = length <= 0 ? errno : ENAMETOOLONG;
    throw std::system_error(error, std::generic_category(), "readlink /proc/self/exe");
  }
  path.resize(static_cast<size_t>(length));
  return path;
}

}  // namespace burst::launch
