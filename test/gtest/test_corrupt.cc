/**
 * ucx-o2m tests: a corrupting peer.
 *
 * A process of the same user can map any segment of ours, as the peers do:
 * through /proc/<pid>/fd/<fd>.  Each test here lets a victim process create
 * its interface or group, lets a separate corrupting process map the
 * segment and write ONE bad value into one field, and checks that the
 * victim fails the endpoint (or drops the element) with
 * UCS_ERR_INVALID_PARAM, without crashing, writing out of bounds or
 * hanging: every wait is bounded, and the victim must exit normally.
 *
 * Roles: rank 0 owns the segment (interface owner or group root), rank 1
 * is the victim when the victim is a member or a sender, rank 2 corrupts.
 */
#include "common/harness.h"
#include "common/uct_env.h"

extern "C" {
#include "o2m_group.h"
}

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

using namespace o2m_test;

namespace {

const uint8_t  AM_ID    = 12;
const uint64_t GROUP_ID = 0xc0de;
const size_t   HDR_LEN  = 8;

/* What the processes of a test share */
struct corrupt_shared {
    uct_o2m_iface_addr_t owner_addr; /* rank 0's interface */
    volatile int         am_calls;   /* victim's handler: messages seen */
    volatile uint64_t    am_bad;     /* victim's handler: bad lengths seen */
};

/* A segment of another process, mapped like a peer maps it */
class foreign_seg {
public:
    foreign_seg(pid_t pid, int fd) : m_addr(MAP_FAILED), m_size(0)
    {
        char path[64];
        struct stat st;
        int lfd;

        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
        lfd = open(path, O_RDWR | O_CLOEXEC);
        CHILD_CHECK(lfd >= 0, "open(%s): %m", path);
        CHILD_CHECK(fstat(lfd, &st) == 0, "fstat(%s): %m", path);
        m_size = st.st_size;
        m_addr = mmap(NULL, m_size, PROT_READ | PROT_WRITE, MAP_SHARED, lfd,
                      0);
        CHILD_CHECK(m_addr != MAP_FAILED, "mmap(%s): %m", path);
        close(lfd);
    }

    ~foreign_seg()
    {
        if (m_addr != MAP_FAILED) {
            munmap(m_addr, m_size);
        }
    }

    template <typename T> T *at(size_t offset = 0)
    {
        CHILD_CHECK(offset + sizeof(T) <= m_size, "offset %zu beyond %zu",
                    offset, m_size);
        return reinterpret_cast<T*>(static_cast<char*>(m_addr) + offset);
    }

    size_t size() const { return m_size; }

private:
    void   *m_addr;
    size_t m_size;
};

/* The group segment of @a group_id, found in the directory of the root's
 * interface segment, mapped by the corrupting process */
struct foreign_group {
    foreign_seg          iface;
    std::unique_ptr<foreign_seg> group;

    explicit foreign_group(const uct_o2m_iface_addr_t &root) :
        iface(root.pid, root.seg_fd)
    {
        uct_o2m_iface_seg_t *hdr = iface.at<uct_o2m_iface_seg_t>();
        unsigned i;

        for (i = 0; i < hdr->max_groups; ++i) {
            uct_o2m_dir_entry_t *e = iface.at<uct_o2m_dir_entry_t>(
                    hdr->dir_offset + (i * sizeof(uct_o2m_dir_entry_t)));
            if (e->in_use && (e->group_id == GROUP_ID)) {
                group.reset(new foreign_seg(root.pid, e->seg_fd));
                return;
            }
        }
        CHILD_CHECK(0, "group 0x%lx not in the directory",
                    (unsigned long)GROUP_ID);
    }

    uct_o2m_group_seg_t *hdr() { return group->at<uct_o2m_group_seg_t>(); }

    /* Element @a seq of the ring (fan-out) */
    uct_o2m_elem_t *ring_elem(uint64_t seq)
    {
        uct_o2m_group_seg_t *h = hdr();
        return group->at<uct_o2m_elem_t>(h->elems_offset +
                                         ((seq & (h->depth - 1)) *
                                          h->elem_stride));
    }

    /* Slot of sender @a pos in element @a seq (fan-in) */
    uct_o2m_elem_t *slot(uint64_t seq, unsigned pos)
    {
        uct_o2m_group_seg_t *h = hdr();
        return group->at<uct_o2m_elem_t>(h->elems_offset +
                                         ((seq & (h->depth - 1)) *
                                          h->elem_stride) +
                                         UCT_O2M_LINE + h->shared_size +
                                         (pos * h->slot_stride));
    }
};

std::map<std::string, std::string> corrupt_config()
{
    return {{"CHECK_INTERVAL", "10ms"}, {"MAX_ZCOPY", "1m"}};
}

uct_o2m_group_params_t group_params(const uct_o2m_iface_addr_t &root,
                                    const std::vector<char> &root_dev,
                                    unsigned my_index, uct_o2m_mode_t mode,
                                    uct_o2m_op_t op)
{
    uct_o2m_group_params_t p;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_O2M_GROUP_FIELD_MODE | UCT_O2M_GROUP_FIELD_OP |
                   UCT_O2M_GROUP_FIELD_DTYPE | UCT_O2M_GROUP_FIELD_HDR_LEN;
    p.group_id   = GROUP_ID;
    p.size       = 2;
    p.my_index   = my_index;
    p.root_index = 0;
    p.mode       = mode;
    p.op         = op;
    p.dtype      = UCT_O2M_DT_INT32;
    p.hdr_len    = HDR_LEN;
    if (my_index != 0) {
        p.field_mask     |= UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        p.root_iface_addr = (const uct_iface_addr_t*)&root;
        p.root_dev_addr   = (const uct_device_addr_t*)root_dev.data();
    }
    return p;
}

/* The victim's handler: counts messages and lengths it was not promised */
ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    corrupt_shared *sh = static_cast<corrupt_shared*>(arg);

    __atomic_fetch_add(&sh->am_calls, 1, __ATOMIC_SEQ_CST);
    if (length > (1 << 20)) {
        sh->am_bad = length;
    }
    return UCS_OK;
}

/* Rank 0 publishes its interface address in @a sh before anyone goes on */
void publish_owner(proc_group &pg, unsigned rank, uct_env &env,
                   corrupt_shared *sh)
{
    if (rank == 0) {
        std::vector<char> a = env.iface_addr();
        memcpy(&sh->owner_addr, a.data(), sizeof(sh->owner_addr));
    }
    pg.barrier(rank);
}

/* A group of plain active messages (no reduction) rooted at rank 0 */
uct_o2m_group_params_t am_group_params(const corrupt_shared *sh,
                                       const std::vector<char> &dev,
                                       unsigned rank)
{
    uct_o2m_group_params_t p = group_params(sh->owner_addr, dev, rank,
                                            UCT_O2M_MODE_BATCHED,
                                            UCT_O2M_OP_GATHER);

    p.field_mask &= ~(UCT_O2M_GROUP_FIELD_OP | UCT_O2M_GROUP_FIELD_DTYPE |
                      UCT_O2M_GROUP_FIELD_HDR_LEN);
    return p;
}

/*
 * The root (rank 0) attaches first, then ranks 1 .. @a members - 1 with
 * @a p; the others only pass the same barriers.
 */
void attach_root_first(proc_group &pg, unsigned rank, uct_env &env,
                       const uct_o2m_group_params_t &p, unsigned members,
                       uct_ep_h *ep)
{
    if (rank == 0) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
    pg.barrier(rank);
    if ((rank != 0) && (rank < members)) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
    pg.barrier(rank);
}

/* A point-to-point endpoint to rank 0's interface, as UCP creates it */
ucs_status_t p2p_ep_create(uct_env &env, const std::vector<char> &dev,
                           const corrupt_shared *sh, uct_ep_h *ep)
{
    return env.ep_create(dev.data(), &sh->owner_addr, ep);
}

/* Victim side: progress until the error handler reports @a expected */
void wait_error(uct_env &env, ucs_status_t expected, const char *what)
{
    bool ok = progress_wait(env, [&]() { return !env.errors.empty(); });

    CHILD_CHECK(ok, "%s: no error in %.0f s", what, wait_timeout);
    CHILD_CHECK(env.errors.front() == expected, "%s: error %s, expected %s",
                what, ucs_status_string(env.errors.front()),
                ucs_status_string(expected));
}

/* A zcopy descriptor as a well-behaved sender would write it */
uct_o2m_zdesc_t good_zdesc(size_t length)
{
    static std::vector<char> buf(1 << 16);
    uct_o2m_zdesc_t z;

    memset(&z, 0, sizeof(z));
    z.pid         = getpid();
    z.iovcnt      = 1;
    z.length      = length;
    z.iov[0].base = (uintptr_t)buf.data();
    z.iov[0].len  = length;
    return z;
}

/* One bad value in an element or a descriptor */
struct elem_fault {
    const char *name;
    std::function<void(uct_o2m_elem_t*)> write;
};

void write_zdesc(uct_o2m_elem_t *elem, const uct_o2m_zdesc_t &z)
{
    elem->length = (uint32_t)z.length;
    elem->flags  = UCT_O2M_ELEM_FLAG_ZCOPY;
    memcpy(UCT_O2M_ELEM_DATA(elem), &z, sizeof(z));
}

std::vector<elem_fault> elem_faults()
{
    return {
        {"elem_length", [](uct_o2m_elem_t *e) {
             e->length = 0xfffffff0u;
             e->flags  = 0;
         }},
        {"elem_am_id", [](uct_o2m_elem_t *e) {
             /* past the interface's handler table */
             e->length = 16;
             e->flags  = 0;
             e->am_id  = 200;
         }},
        {"elem_flags", [](uct_o2m_elem_t *e) {
             e->length = 16;
             e->flags  = 0x80;
         }},
        {"zdesc_iovcnt", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(1024);
             z.iovcnt = 400;
             write_zdesc(e, z);
         }},
        {"zdesc_header_length_above_length", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(0);
             z.iovcnt        = 0;
             z.header_length = 200;
             write_zdesc(e, z);
         }},
        {"zdesc_header_length_above_max", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(4096);
             z.header_length  = 4096;
             z.iovcnt         = 0;
             write_zdesc(e, z);
         }},
        {"zdesc_length_above_max_zcopy", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(1024);
             z.length     = 5ull << 30;
             z.iov[0].len = z.length;
             write_zdesc(e, z);
         }},
        {"zdesc_iov_sum", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(1024);
             z.iov[0].len = 4096;
             write_zdesc(e, z);
         }},
        {"zdesc_iov_sum_wraps", [](uct_o2m_elem_t *e) {
             uct_o2m_zdesc_t z = good_zdesc(8);
             z.iovcnt      = 2;
             z.iov[0].len  = UINT64_MAX - 7;
             z.iov[1].base = z.iov[0].base;
             z.iov[1].len  = 16;
             write_zdesc(e, z);
         }},
    };
}

/* One bad value in a segment header */
struct geom_fault {
    const char *name;
    bool       incast;  /* Group tests: which transport */
    std::function<void(uct_o2m_group_seg_t*, size_t)> write;
};

std::vector<geom_fault> group_geom_faults()
{
    typedef uct_o2m_group_seg_t seg_t;
    return {
        {"bcast_acks_offset", false, [](seg_t *h, size_t size) {
             h->acks_offset = size - UCT_O2M_LINE;
         }},
        {"bcast_acks_offset_misaligned", false, [](seg_t *h, size_t size) {
             h->acks_offset += 4;
         }},
        {"bcast_members_offset", false, [](seg_t *h, size_t size) {
             h->members_offset = 1ull << 40;
         }},
        {"bcast_elems_offset", false, [](seg_t *h, size_t size) {
             h->elems_offset = size;
         }},
        {"bcast_depth_zero", false, [](seg_t *h, size_t size) {
             h->depth = 0;
         }},
        {"bcast_depth_not_pow2", false, [](seg_t *h, size_t size) {
             h->depth = 3;
         }},
        {"bcast_depth_beyond_segment", false, [](seg_t *h, size_t size) {
             h->depth *= 2;
         }},
        {"bcast_elem_stride", false, [](seg_t *h, size_t size) {
             h->elem_stride = 1ull << 31;
         }},
        {"bcast_elem_stride_small", false, [](seg_t *h, size_t size) {
             h->elem_stride = UCT_O2M_LINE;
         }},
        {"bcast_max_length", false, [](seg_t *h, size_t size) {
             h->max_length = h->elem_stride;
         }},
        {"incast_slot_stride", true, [](seg_t *h, size_t size) {
             h->slot_stride = h->elem_stride * 2;
         }},
        {"incast_slot_stride_small", true, [](seg_t *h, size_t size) {
             h->slot_stride = UCT_O2M_LINE;
         }},
        {"incast_shared_size", true, [](seg_t *h, size_t size) {
             h->shared_size = 1ull << 20;
         }},
        {"incast_max_length", true, [](seg_t *h, size_t size) {
             h->max_length = h->slot_stride;
         }},
        {"incast_hdr_len", true, [](seg_t *h, size_t size) {
             h->max_length = 0; /* below hdr_len */
         }},
        {"incast_elems_offset", true, [](seg_t *h, size_t size) {
             h->elems_offset = size - UCT_O2M_LINE;
         }},
        {"incast_depth", true, [](seg_t *h, size_t size) {
             h->depth = 1u << 30;
         }},
        {"incast_members_offset", true, [](seg_t *h, size_t size) {
             h->members_offset = size;
         }},
    };
}

struct iface_fault {
    const char *name;
    std::function<void(uct_o2m_iface_seg_t*, size_t)> write;
};

std::vector<iface_fault> iface_geom_faults()
{
    typedef uct_o2m_iface_seg_t seg_t;
    return {
        {"fifo_offset", [](seg_t *h, size_t size) {
             h->fifo_offset = size - UCT_O2M_LINE;
         }},
        {"fifo_depth_zero", [](seg_t *h, size_t size) {
             h->fifo_depth = 0;
         }},
        {"fifo_depth_not_pow2", [](seg_t *h, size_t size) {
             h->fifo_depth = 5;
         }},
        {"fifo_depth_beyond_segment", [](seg_t *h, size_t size) {
             h->fifo_depth *= 4;
         }},
        {"elem_size_small", [](seg_t *h, size_t size) {
             h->elem_size = UCT_O2M_LINE;
         }},
        {"elem_size_large", [](seg_t *h, size_t size) {
             h->elem_size = 1u << 30;
         }},
        {"dir_offset", [](seg_t *h, size_t size) {
             h->dir_offset = size;
         }},
        {"max_groups", [](seg_t *h, size_t size) {
             h->max_groups = 1u << 20;
         }},
        {"max_groups_beyond_segment", [](seg_t *h, size_t size) {
             h->max_groups = 65536;
         }},
    };
}

std::string name_of(const char *name)
{
    return name;
}

/* A test's name: its fault's name */
struct fault_name {
    template <typename T>
    std::string operator()(const ::testing::TestParamInfo<T> &i) const
    {
        return name_of(i.param.name);
    }
};

/* What a process of a corruption test gets: its rank, its interface and
 * device address, and an endpoint that is destroyed after @a fn if set */
typedef std::function<void(proc_group &pg, unsigned rank,
                           corrupt_shared *sh, uct_env &env,
                           const std::vector<char> &dev, uct_ep_h &ep)>
        corrupt_fn;

/*
 * Runs @a fn in @a nprocs processes sharing a corrupt_shared, each with an
 * interface of @a tl (corrupt_config(), and @a root_config on top of it on
 * rank 0); every child must exit with success within 60 s
 */
void run_corrupt(unsigned nprocs, const char *tl, const corrupt_fn &fn,
                 const std::map<std::string, std::string> &root_config = {})
{
    proc_group pg(nprocs, sizeof(corrupt_shared) + 4096);
    corrupt_shared *sh = static_cast<corrupt_shared*>(pg.shared());

    pg.run_ok([&](unsigned rank) {
        std::map<std::string, std::string> config = corrupt_config();
        uct_ep_h ep                                = NULL;

        if (rank == 0) {
            for (const auto &kv : root_config) {
                config[kv.first] = kv.second;
            }
        }

        uct_env env(tl, config);
        fn(pg, rank, sh, env, env.dev_addr(), ep);
        if (ep != NULL) {
            uct_ep_destroy(ep);
        }
    }, 60);
}

} // namespace


/*
 * Group geometry: the root's segment is corrupted before a member attaches;
 * the member's endpoint creation fails with UCS_ERR_INVALID_PARAM.
 */
class corrupt_group_geom : public ::testing::TestWithParam<geom_fault> {};

TEST_P(corrupt_group_geom, member_attach_fails)
{
    const geom_fault fault = GetParam();
    const char *tl         = fault.incast ? "sm_incast" : "sm_bcast";
    uct_o2m_op_t op        = fault.incast ? UCT_O2M_OP_SUM :
                                            UCT_O2M_OP_GATHER;

    run_corrupt(3, tl, [&](proc_group &pg, unsigned rank,
                           corrupt_shared *sh, uct_env &env,
                           const std::vector<char> &dev, uct_ep_h &ep) {
        if (rank == 0) {
            std::vector<char> a = env.iface_addr();
            memcpy(&sh->owner_addr, a.data(), sizeof(sh->owner_addr));
            uct_o2m_group_params_t p = group_params(sh->owner_addr, dev, 0,
                                                    UCT_O2M_MODE_BATCHED, op);
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));
        }
        pg.barrier(rank);

        if (rank == 2) {
            foreign_group fg(sh->owner_addr);
            fault.write(fg.hdr(), fg.group->size());
        }
        pg.barrier(rank);

        if (rank == 1) {
            uct_o2m_group_params_t p = group_params(sh->owner_addr, dev, 1,
                                                    UCT_O2M_MODE_BATCHED, op);
            ucs_status_t status = uct_o2m_ep_create(env.iface(), &p, &ep);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "%s: member ep creation: %s", fault.name,
                        ucs_status_string(status));
        }
        pg.barrier(rank);
    });
}

INSTANTIATE_TEST_SUITE_P(field, corrupt_group_geom,
                         ::testing::ValuesIn(group_geom_faults()),
                         fault_name());


/*
 * Interface geometry: a sender (p2p endpoint) or a group member maps an
 * interface segment whose header was corrupted.
 */
class corrupt_iface_geom : public ::testing::TestWithParam<iface_fault> {};

TEST_P(corrupt_iface_geom, peer_map_fails)
{
    const iface_fault fault = GetParam();

    run_corrupt(3, "sm_bcast", [&](proc_group &pg, unsigned rank,
                                   corrupt_shared *sh, uct_env &env,
                                   const std::vector<char> &dev, uct_ep_h &ep) {
        ucs_status_t status;

        publish_owner(pg, rank, env, sh);

        if (rank == 2) {
            foreign_seg seg(sh->owner_addr.pid, sh->owner_addr.seg_fd);
            fault.write(seg.at<uct_o2m_iface_seg_t>(), seg.size());
        }
        pg.barrier(rank);

        if (rank == 1) {
            /* A point-to-point endpoint, as UCP creates it */
            status = p2p_ep_create(env, dev, sh, &ep);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "%s: p2p ep creation: %s", fault.name,
                        ucs_status_string(status));

            /* A group member maps the root's interface segment too */
            uct_o2m_group_params_t p = group_params(sh->owner_addr, dev, 1,
                                                    UCT_O2M_MODE_BATCHED,
                                                    UCT_O2M_OP_GATHER);
            status = uct_o2m_ep_create(env.iface(), &p, &ep);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "%s: group member ep creation: %s", fault.name,
                        ucs_status_string(status));
        }
        pg.barrier(rank);
    });
}

INSTANTIATE_TEST_SUITE_P(field, corrupt_iface_geom,
                         ::testing::ValuesIn(iface_geom_faults()),
                         fault_name());


/*
 * Fan-out ring: the corrupting process publishes a bad element 0 in the
 * root's ring; the receiver fails its endpoint and never calls its handler.
 */
class corrupt_bcast_elem : public ::testing::TestWithParam<elem_fault> {};

TEST_P(corrupt_bcast_elem, receiver_fails)
{
    const elem_fault fault = GetParam();

    run_corrupt(3, "sm_bcast", [&](proc_group &pg, unsigned rank,
                                   corrupt_shared *sh, uct_env &env,
                                   const std::vector<char> &dev, uct_ep_h &ep) {
        env.set_am_handler(AM_ID, count_am, sh);
        publish_owner(pg, rank, env, sh);

        attach_root_first(pg, rank, env, am_group_params(sh, dev, rank), 2,
                          &ep);

        if (rank == 2) {
            foreign_group fg(sh->owner_addr);
            uct_o2m_elem_t *elem = fg.ring_elem(0);

            elem->am_id = AM_ID;
            fault.write(elem);
            uct_o2m_elem_publish(elem, 0);
        } else if (rank == 1) {
            wait_error(env, UCS_ERR_INVALID_PARAM, fault.name);
            CHILD_CHECK(sh->am_calls == 0, "%s: handler called %d times "
                        "(length %lu)", fault.name, sh->am_calls,
                        (unsigned long)sh->am_bad);
            CHILD_CHECK(uct_ep_flush(ep, 0, NULL) == UCS_ERR_INVALID_PARAM,
                        "%s: flush after the failure", fault.name);
        }
        pg.barrier(rank);
    });
}

INSTANTIATE_TEST_SUITE_P(field, corrupt_bcast_elem,
                         ::testing::ValuesIn(elem_faults()), fault_name());


/*
 * Point-to-point FIFO: the corrupting process claims an element of the
 * victim's receive FIFO and publishes a bad one; then a good sender sends.
 * The victim drops the bad element (no sender to fail), delivers the good
 * message and reports no error.
 */
class corrupt_p2p_elem : public ::testing::TestWithParam<elem_fault> {};

TEST_P(corrupt_p2p_elem, element_dropped_fifo_moves)
{
    const elem_fault fault = GetParam();

    run_corrupt(3, "sm_bcast", [&](proc_group &pg, unsigned rank,
                                   corrupt_shared *sh, uct_env &env,
                                   const std::vector<char> &dev, uct_ep_h &ep) {
        env.set_am_handler(AM_ID, count_am, sh);
        publish_owner(pg, rank, env, sh);

        if (rank == 2) {
            foreign_seg seg(sh->owner_addr.pid, sh->owner_addr.seg_fd);
            uct_o2m_iface_seg_t *hdr = seg.at<uct_o2m_iface_seg_t>();
            uint64_t head = __atomic_fetch_add(&hdr->head, 1,
                                               __ATOMIC_ACQ_REL);
            uct_o2m_elem_t *elem = seg.at<uct_o2m_elem_t>(
                    hdr->fifo_offset +
                    ((head & (hdr->fifo_depth - 1)) * hdr->elem_size));

            elem->am_id = AM_ID;
            fault.write(elem);
            uct_o2m_elem_publish(elem, head);
        }
        pg.barrier(rank);

        if (rank == 1) {
            uint64_t word = 42;

            CHILD_CHECK_OK(p2p_ep_create(env, dev, sh, &ep));
            CHILD_CHECK_OK(uct_ep_am_short(ep, AM_ID, 7, &word,
                                           sizeof(word)));
            bool ok = progress_wait(env, [&]() {
                return uct_ep_flush(ep, 0, NULL) == UCS_OK;
            });
            CHILD_CHECK(ok, "%s: good message not consumed", fault.name);
            uct_ep_destroy(ep);
            ep = NULL;
        } else if (rank == 0) {
            bool ok = progress_wait(env, [&]() { return sh->am_calls > 0; });
            CHILD_CHECK(ok, "%s: good message after the bad one not "
                        "delivered", fault.name);
            progress_for(env, 0.01);
            CHILD_CHECK(sh->am_calls == 1, "%s: %d messages delivered",
                        fault.name, sh->am_calls);
            CHILD_CHECK(sh->am_bad == 0, "%s: handler got %lu bytes",
                        fault.name, (unsigned long)sh->am_bad);
            CHILD_CHECK(env.errors.empty(), "%s: error %s", fault.name,
                        ucs_status_string(env.errors.front()));
        }
        pg.barrier(rank);
    });
}

INSTANTIATE_TEST_SUITE_P(field, corrupt_p2p_elem,
                         ::testing::ValuesIn(elem_faults()), fault_name());


/*
 * Fan-in slots: the corrupting process stamps the slot of the only sender
 * of a sum reduction (hdr_len 8, int32) with a bad value; the root fails.
 */
std::vector<elem_fault> slot_faults()
{
    std::vector<elem_fault> faults = elem_faults();

    faults.push_back({"slot_length_below_hdr_len", [](uct_o2m_elem_t *e) {
        e->length = HDR_LEN - 4;
        e->flags  = 0;
    }});
    faults.push_back({"slot_length_not_whole_elements", [](uct_o2m_elem_t *e) {
        e->length = HDR_LEN + 6;
        e->flags  = 0;
    }});
    faults.push_back({"slot_shared_flag_without_buffer", [](uct_o2m_elem_t *e) {
        e->length = HDR_LEN + 4;
        e->flags  = UCT_O2M_ELEM_FLAG_SHARED;
    }});
    faults.push_back({"slot_zcopy_length_above_4g", [](uct_o2m_elem_t *e) {
        /* 4 GiB + 12: the 32-bit length field says 12 */
        uct_o2m_zdesc_t z = good_zdesc(12);
        z.length      = (4ull << 30) + 12;
        z.iov[0].len  = z.length;
        write_zdesc(e, z);
    }});
    return faults;
}

class corrupt_incast_slot : public ::testing::TestWithParam<elem_fault> {};

TEST_P(corrupt_incast_slot, root_fails)
{
    const elem_fault fault = GetParam();

    run_corrupt(3, "sm_incast", [&](proc_group &pg, unsigned rank,
                                    corrupt_shared *sh, uct_env &env,
                                    const std::vector<char> &dev,
                                    uct_ep_h &ep) {
        env.set_am_handler(AM_ID, count_am, sh);
        publish_owner(pg, rank, env, sh);
        attach_root_first(pg, rank, env,
                          group_params(sh->owner_addr, dev, rank,
                                       UCT_O2M_MODE_BATCHED, UCT_O2M_OP_SUM),
                          2, &ep);

        if (rank == 2) {
            foreign_group fg(sh->owner_addr);
            uct_o2m_elem_t *slot = fg.slot(0, 0);

            slot->am_id = AM_ID;
            fault.write(slot);
            uct_o2m_elem_publish(slot, 0); /* A group of 2 is stamped */
        } else if (rank == 0) {
            wait_error(env, UCS_ERR_INVALID_PARAM, fault.name);
            CHILD_CHECK(sh->am_calls == 0, "%s: handler called %d times "
                        "(length %lu)", fault.name, sh->am_calls,
                        (unsigned long)sh->am_bad);
        } else {
            /* The sender learns of the failure from the root */
            wait_error(env, UCS_ERR_INVALID_PARAM, fault.name);
        }
        pg.barrier(rank);
    });
}

INSTANTIATE_TEST_SUITE_P(field, corrupt_incast_slot,
                         ::testing::ValuesIn(slot_faults()), fault_name());


/*
 * A group of 3 (root 0) over sm_bcast: once every member attached, rank 2
 * runs @a tamper on the group's shared memory; then the root sends @a count
 * messages (and flushes, with @a flush), which rank 1 must all receive
 * without an error
 */
static void
run_tampered_group(int count, bool flush,
                   const std::function<void(corrupt_shared*)> &tamper)
{
    run_corrupt(3, "sm_bcast", [&](proc_group &pg, unsigned rank,
                                   corrupt_shared *sh, uct_env &env,
                                   const std::vector<char> &dev, uct_ep_h &ep) {
        env.set_am_handler(AM_ID, count_am, sh);
        publish_owner(pg, rank, env, sh);
        attach_root_first(pg, rank, env, am_group_params(sh, dev, rank), 2,
                          &ep);
        if (rank == 2) {
            tamper(sh);
        }
        pg.barrier(rank);

        if (rank == 0) {
            for (int i = 0; i < count; ++i) {
                uint64_t word = i;
                bool ok = progress_wait(env, [&]() {
                    return uct_ep_am_short(ep, AM_ID, i, &word,
                                           sizeof(word)) == UCS_OK;
                });
                CHILD_CHECK(ok, "send %d", i);
            }
            CHILD_CHECK(!flush || progress_wait(env, [&]() {
                return uct_ep_flush(ep, 0, NULL) == UCS_OK;
            }), "flush");
        } else if (rank == 1) {
            bool ok = progress_wait(env, [&]() {
                return sh->am_calls == count;
            });
            CHILD_CHECK(ok, "received %d of %d", sh->am_calls, count);
            CHILD_CHECK(env.errors.empty(), "error %s",
                        ucs_status_string(env.errors.front()));
        }
        pg.barrier(rank);
    });
}

/*
 * Geometry is read once: after a member attached, the root's header is
 * overwritten with nonsense, and the group goes on working.
 */
TEST(corrupt_group, geometry_changed_after_attach_is_ignored)
{
    run_tampered_group(100, true, [](corrupt_shared *sh) {
        foreign_group fg(sh->owner_addr);
        uct_o2m_group_seg_t *h = fg.hdr();
        h->acks_offset    = 1ull << 50;
        h->elems_offset   = 1ull << 50;
        h->members_offset = 1ull << 50;
        h->elem_stride    = 1ull << 40;
        h->depth          = 7;
        h->max_length     = 0xfffffff0u;
    });
}


/*
 * Segment size: a peer cannot shrink a segment under our mappings (which
 * would raise SIGBUS in every process that maps it), and a segment that
 * could be resized is refused.
 */
TEST(corrupt_seg, resize_refused_group_goes_on)
{
    run_tampered_group(10, false, [](corrupt_shared *sh) {
        foreign_group fg(sh->owner_addr);
        char path[64];
        int fds[2], i;

        snprintf(path, sizeof(path), "/proc/%d/fd/%d",
                 (int)sh->owner_addr.pid, sh->owner_addr.seg_fd);
        fds[0] = open(path, O_RDWR | O_CLOEXEC);
        uct_o2m_iface_seg_t *ih = fg.iface.at<uct_o2m_iface_seg_t>();
        for (i = 0; i < (int)ih->max_groups; ++i) {
            uct_o2m_dir_entry_t *e = fg.iface.at<uct_o2m_dir_entry_t>(
                    ih->dir_offset + (i * sizeof(*e)));
            if (e->in_use && (e->group_id == GROUP_ID)) {
                break;
            }
        }
        uct_o2m_dir_entry_t *e = fg.iface.at<uct_o2m_dir_entry_t>(
                ih->dir_offset + (i * sizeof(*e)));
        snprintf(path, sizeof(path), "/proc/%d/fd/%d",
                 (int)sh->owner_addr.pid, e->seg_fd);
        fds[1] = open(path, O_RDWR | O_CLOEXEC);
        for (i = 0; i < 2; ++i) {
            CHILD_CHECK(fds[i] >= 0, "open: %m");
            CHILD_CHECK(ftruncate(fds[i], 0) != 0,
                        "segment %d could be shrunk", i);
            CHILD_CHECK(ftruncate(fds[i], 1 << 30) != 0,
                        "segment %d could be grown", i);
            close(fds[i]);
        }
    });
}

TEST(corrupt_seg, unsealed_segment_refused)
{
    run_corrupt(2, "sm_bcast", [&](proc_group &pg, unsigned rank,
                                   corrupt_shared *sh, uct_env &env,
                                   const std::vector<char> &dev, uct_ep_h &ep) {
        int fd = -1;

        if (rank == 0) {
            /* A copy of our real segment in a memfd that can be resized */
            std::vector<char> a = env.iface_addr();
            uct_o2m_iface_addr_t addr;

            memcpy(&addr, a.data(), sizeof(addr));
            foreign_seg real(addr.pid, addr.seg_fd);
            fd = memfd_create("o2m-test-unsealed", MFD_CLOEXEC);
            CHILD_CHECK(fd >= 0, "memfd_create: %m");
            CHILD_CHECK(ftruncate(fd, real.size()) == 0, "ftruncate: %m");
            CHILD_CHECK(pwrite(fd, real.at<char>(), real.size(), 0) ==
                        (ssize_t)real.size(), "pwrite: %m");
            addr.seg_fd    = fd;
            sh->owner_addr = addr;
        }
        pg.barrier(rank);

        if (rank == 1) {
            ucs_status_t status = p2p_ep_create(env, dev, sh, &ep);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "p2p ep to an unsealed segment: %s",
                        ucs_status_string(status));
        }
        pg.barrier(rank);

        if (fd >= 0) {
            close(fd);
        }
    });
}


/*
 * A fan-in sender whose own limit (SEG_SIZE) is above the root's: a bcopy
 * contribution longer than the root's limit is refused before anything is
 * written past the sender's slot.
 */
TEST(corrupt_incast, bcopy_above_root_limit_stays_in_slot)
{
    run_corrupt(3, "sm_incast", [&](proc_group &pg, unsigned rank,
                                    corrupt_shared *sh, uct_env &env,
                                    const std::vector<char> &dev,
                                    uct_ep_h &ep) {
        publish_owner(pg, rank, env, sh);
        uct_o2m_group_params_t p = group_params(sh->owner_addr, dev, rank,
                                                UCT_O2M_MODE_BATCHED,
                                                UCT_O2M_OP_GATHER);
        p.field_mask &= ~(UCT_O2M_GROUP_FIELD_DTYPE |
                          UCT_O2M_GROUP_FIELD_HDR_LEN);
        p.size = 3;
        attach_root_first(pg, rank, env, p, 3, &ep);

        if (rank == 1) {
            ssize_t len = uct_ep_am_bcopy(ep, AM_ID, [](void *dest,
                                                         void *arg) {
                memset(dest, 0xaa, 4000);
                return (size_t)4000;
            }, NULL, 0);
            CHILD_CHECK(len == UCS_ERR_INVALID_PARAM,
                        "bcopy above the root's limit: %zd", len);

            /* The slot of the other sender, and the rest of the ring */
            foreign_group fg(sh->owner_addr);
            uct_o2m_group_seg_t *h = fg.hdr();
            const uint8_t *next = reinterpret_cast<const uint8_t*>(
                    fg.slot(0, 1));
            for (size_t i = 0; i < h->slot_stride; ++i) {
                CHILD_CHECK(next[i] == 0, "byte %zu of the next slot "
                            "overwritten", i);
            }
        }
        pg.barrier(rank);
    }, {{"SEG_SIZE", "1024"}});
}
