// A TCP port that is free right now on an IPv4 address: bound to port 0, read back, released. For
// listeners that can't bind port 0 and report the port they got (cpprestsdk's http_listener): the
// caller binds the port right after, and a race with another process is possible but rare.
#ifndef TWINSCALE_CONTROLLER_COMMON_FREE_PORT_H_
#define TWINSCALE_CONTROLLER_COMMON_FREE_PORT_H_

#include <string>

namespace twinscale {

// 0 when `ipv4` is not a dotted IPv4 address or no port could be bound.
int FreeTcpPort(const std::string& ipv4 = "127.0.0.1");

}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_COMMON_FREE_PORT_H_
