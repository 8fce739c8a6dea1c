/**
 * ucx-o2m tests: UCT endpoints between the ranks of a proc_group (interface
 * addresses exchanged through the group's shared memory).
 */
#ifndef O2M_TEST_PEERS_H_
#define O2M_TEST_PEERS_H_

#include "harness.h"
#include "uct_env.h"

#include <vector>

namespace o2m_test {

/*
 * Addresses of every rank's interface, exchanged through a proc_group
 */
struct peer_addrs {
    std::vector<std::vector<char>> iface;
    std::vector<std::vector<char>> dev;

    void exchange(proc_group &pg, unsigned rank, const uct_env &env);

    /*
     * Member @a rank of group @a group_id of @a size members, rooted at rank
     * 0: the members name the root's addresses (which stay ours)
     */
    uct_o2m_group_params_t group_params(uint64_t group_id, unsigned size,
                                        unsigned rank) const;

    /*
     * Member @a my_index of group @a group_id of @a size members, whose root
     * (index @a root_index) is rank @a root_rank's interface: the members
     * name its addresses
     */
    uct_o2m_group_params_t group_params(uint64_t group_id, unsigned size,
                                        unsigned my_index,
                                        unsigned root_index,
                                        unsigned root_rank) const;

    /* A point-to-point endpoint of @a env to rank @a peer */
    ucs_status_t p2p_ep_create(const uct_env &env, unsigned peer,
                               uct_ep_h *ep) const;
};

/*
 * A point-to-point endpoint to @a peer, which must be reachable; with
 * @a status_p, uct_ep_create's status is returned there instead of checked
 */
uct_ep_h create_p2p_ep(uct_env &env, const peer_addrs &addrs,
                       unsigned peer, ucs_status_t *status_p = NULL);

/* The root (rank 0) creates its group endpoint first, then the others */
void group_ep_create_root_first(proc_group &pg, unsigned rank,
                                const uct_env &env,
                                const uct_o2m_group_params_t &p,
                                uct_ep_h *ep);


} // namespace o2m_test

#endif
