/**
 * ucx-o2m tests: UCT endpoints between the ranks of a proc_group (peers.h).
 */
#include "peers.h"

#include <cstring>

namespace o2m_test {

void peer_addrs::exchange(proc_group &pg, unsigned rank, const uct_env &env)
{
    std::vector<char> mine_if  = env.iface_addr();
    std::vector<char> mine_dev = env.dev_addr();
    std::vector<char> all_if(mine_if.size() * pg.size());
    std::vector<char> all_dev(mine_dev.size() * pg.size());

    pg.allgather(rank, mine_if.data(), mine_if.size(), all_if.data());
    pg.allgather(rank, mine_dev.data(), mine_dev.size(), all_dev.data());
    iface.clear();
    dev.clear();
    for (unsigned r = 0; r < pg.size(); ++r) {
        iface.emplace_back(all_if.begin() + (r * mine_if.size()),
                           all_if.begin() + ((r + 1) * mine_if.size()));
        dev.emplace_back(all_dev.begin() + (r * mine_dev.size()),
                         all_dev.begin() + ((r + 1) * mine_dev.size()));
    }
}

uct_o2m_group_params_t
peer_addrs::group_params(uint64_t group_id, unsigned size, unsigned rank) const
{
    return group_params(group_id, size, rank, 0, 0);
}

uct_o2m_group_params_t
peer_addrs::group_params(uint64_t group_id, unsigned size, unsigned my_index,
                         unsigned root_index, unsigned root_rank) const
{
    uct_o2m_group_params_t p;

    memset(&p, 0, sizeof(p));
    p.group_id   = group_id;
    p.size       = size;
    p.my_index   = my_index;
    p.root_index = root_index;
    if (my_index != root_index) {
        p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        p.root_iface_addr = (const uct_iface_addr_t*)iface[root_rank].data();
        p.root_dev_addr   = (const uct_device_addr_t*)dev[root_rank].data();
    }
    return p;
}

ucs_status_t peer_addrs::p2p_ep_create(const uct_env &env, unsigned peer,
                                       uct_ep_h *ep) const
{
    return env.ep_create(dev[peer].data(), iface[peer].data(), ep);
}

uct_ep_h create_p2p_ep(uct_env &env, const peer_addrs &addrs,
                       unsigned peer, ucs_status_t *status_p)
{
    ucs_status_t status;
    uct_ep_h ep = NULL;

    CHILD_CHECK(uct_iface_is_reachable(env.iface(),
                    (const uct_device_addr_t*)addrs.dev[peer].data(),
                    (const uct_iface_addr_t*)addrs.iface[peer].data()),
                "peer %u is not reachable", peer);

    status = addrs.p2p_ep_create(env, peer, &ep);
    if (status_p != NULL) {
        *status_p = status;
        return ep;
    }
    CHILD_CHECK(status == UCS_OK, "uct_ep_create to %u: %s", peer,
                ucs_status_string(status));
    return ep;
}

void group_ep_create_root_first(proc_group &pg, unsigned rank,
                                const uct_env &env,
                                const uct_o2m_group_params_t &p,
                                uct_ep_h *ep)
{
    if (rank == 0) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
    pg.barrier(rank);
    if (rank != 0) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
}

} // namespace o2m_test
