/**
 * ucx-o2m tests: whether IP multicast works on the loopback device here.
 */
#include "common/multicast.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace o2m_test {

bool loopback_multicast_works(std::string *why)
{
    struct sockaddr_in group = {}, any = {};
    struct ip_mreq mreq;
    struct in_addr lo;
    socklen_t len = sizeof(group);
    char buf[8];
    bool ok = false;
    int r, s;

    lo.s_addr = htonl(INADDR_LOOPBACK);
    r = socket(AF_INET, SOCK_DGRAM, 0);
    s = socket(AF_INET, SOCK_DGRAM, 0);
    group.sin_family = AF_INET;
    inet_pton(AF_INET, "239.255.63.251", &group.sin_addr);
    mreq.imr_multiaddr = group.sin_addr;
    mreq.imr_interface = lo;
    any.sin_family      = AF_INET;
    any.sin_addr        = lo;

    if ((r < 0) || (s < 0) ||
        bind(r, (struct sockaddr*)&group, sizeof(group)) ||
        getsockname(r, (struct sockaddr*)&group, &len) ||
        setsockopt(r, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq)) ||
        bind(s, (struct sockaddr*)&any, sizeof(any)) ||
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo))) {
        *why = std::string("socket setup: ") + strerror(errno);
    } else if (sendto(s, "mc", 2, 0, (struct sockaddr*)&group,
                      sizeof(group)) != 2) {
        *why = std::string("sendto: ") + strerror(errno);
    } else {
        for (int i = 0; (i < 1000) && !ok; ++i) {
            ok = (recv(r, buf, sizeof(buf), MSG_DONTWAIT) == 2);
            if (!ok) {
                usleep(1000);
            }
        }
        if (!ok) {
            *why = "a multicast packet on lo did not arrive";
        }
    }

    if (r >= 0) {
        close(r);
    }
    if (s >= 0) {
        close(s);
    }
    return ok;
}

} // namespace o2m_test
