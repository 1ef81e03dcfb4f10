// Which address a rank's sockets bind (network_address.h): interfaces named in
// GLOO_SOCKET_IFNAME must exist, loopback is recognised, and the address towards a master
// on this host is loopback (every Linux host has `lo`).
#include "burst/launch/network_address.h"

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::launch {
namespace {

TEST(NetworkAddress, InterfacesMustExist) {
  EXPECT_EQ(socket_interfaces("lo"), std::vector<std::string>{"lo"});
  EXPECT_EQ(socket_interfaces("lo,lo"), (std::vector<std::string>{"lo", "lo"}));
  EXPECT_THROW(socket_interfaces("burst_no_such_if"), UserError);
  EXPECT_THROW(socket_interfaces(""), UserError);
  EXPECT_THROW(socket_interfaces("lo,"), UserError);
  try {
    socket_interfaces("lo,burst_no_such_if");
    FAIL() << "a missing interface was accepted";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("GLOO_SOCKET_IFNAME=lo,burst_no_such_if"), std::string::npos) << message;
    EXPECT_NE(message.find("no interface 'burst_no_such_if'"), std::string::npos) << message;
    EXPECT_NE(message.find("lo"), std::string::npos) << message;  // the host's interfaces
  }
}

TEST(NetworkAddress, RecognisesLoopback) {
  for (const char* address : {"localhost", "127.0.0.1", "127.1.2.3", "::1"}) EXPECT_TRUE(is_loopback_address(address)) << address;
  for (const char* address : {"10.0.0.1", "192.168.1.1", "::2", "example.com", ""}) {
    EXPECT_FALSE(is_loopback_address(address)) << address;
  }
}

TEST(NetworkAddress, TheAddressTowardsThisHostIsLoopback) {
  EXPECT_EQ(local_address_towards("127.0.0.1"), "127.0.0.1");
  EXPECT_TRUE(is_loopback_address(local_address_towards("localhost")));
}

}  // namespace
}  // namespace burst::launch
