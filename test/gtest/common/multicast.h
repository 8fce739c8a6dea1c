/**
 * ucx-o2m tests: whether IP multicast works on the loopback device here
 * (mc_udp's tests and UCG's over mc_udp skip when it does not).
 */
#ifndef O2M_TEST_MULTICAST_H_
#define O2M_TEST_MULTICAST_H_

#include <string>

namespace o2m_test {

/* Multicast between two sockets of this process on lo, as mc_udp does it:
 * false, and why, when it does not work */
bool loopback_multicast_works(std::string *why);

} // namespace o2m_test

#endif
