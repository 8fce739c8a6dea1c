/**
 * ucx-o2m multi-host test: one mc_udp group across the bed's hosts (one MPI
 * rank per host; MPI only exchanges the interface addresses and ends the
 * test), rank 0 the root.  The root sends COUNT messages of 8 bytes to
 * SEG_SIZE by multicast; every member checks each one (index, length,
 * every byte) in order.  Loss is what the bed's nftables rules drop.
 * Prints one line per rank with its counters; exits 1 on any mismatch,
 * error or when DEADLINE seconds pass.
 *
 *   mc_udp_bcast COUNT DEADLINE GROUP_ID
 *
 * Environment: UCX_NET_DEVICES is ignored (the device is eth0, the bed's);
 * UCX_MC_UDP_* configure the transport.  Built and run by mc_udp.sh.
 */
#include <uct_o2m.h>
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define AM_ID 3

static unsigned g_rank, g_received, g_bad;
static size_t   g_max;

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "rank %u: ", g_rank); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            MPI_Abort(MPI_COMM_WORLD, 1); \
        } \
    } while (0)

static size_t msg_len(unsigned k)
{
    return 8 + ((k * 2654435761u) % (g_max - 7));
}

static uint8_t msg_byte(unsigned k, size_t i)
{
    return (uint8_t)((k * 131u) ^ (i * 7u) ^ (i >> 8));
}

static void fill(uint8_t *buf, unsigned k)
{
    size_t len = msg_len(k), i;
    uint64_t idx = k;

    memcpy(buf, &idx, 8);
    for (i = 8; i < len; ++i) {
        buf[i] = msg_byte(k, i);
    }
}

static uint8_t *g_pack_buf;

static size_t pack(void *dest, void *arg)
{
    size_t len = *(size_t*)arg;

    memcpy(dest, g_pack_buf, len);
    return len;
}

static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    const uint8_t *p = data;
    uint64_t idx;
    size_t i;

    memcpy(&idx, p, 8);
    if ((length < 8) || (idx != g_received) ||
        (length != msg_len(g_received))) {
        ++g_bad;
    } else {
        for (i = 8; i < length; ++i) {
            if (p[i] != msg_byte(g_received, i)) {
                ++g_bad;
                break;
            }
        }
    }
    ++g_received;
    return UCS_OK;
}

int main(int argc, char **argv)
{
    uct_component_h *components, comp = NULL;
    unsigned num_components, i, count, size;
    uct_md_config_t *md_config;
    uct_iface_config_t *if_config;
    uct_iface_params_t params;
    uct_o2m_group_params_t gp;
    uct_mc_udp_counters_t c;
    uct_mc_udp_repair_stats_t rep;
    uint64_t hist;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_attr_t attr;
    uct_iface_h iface;
    uct_md_h md;
    uct_ep_h ep;
    uint8_t addr[8], *all, *buf;
    double deadline;
    ucs_status_t status;
    MPI_Request req;
    int rank, nprocs, flag;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    g_rank = rank;
    size   = nprocs;
    CHECK(argc == 4, "usage: %s COUNT DEADLINE GROUP_ID", argv[0]);
    count    = atoi(argv[1]);
    deadline = MPI_Wtime() + atof(argv[2]);

    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                   &async) == UCS_OK, "async");
    CHECK(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) ==
          UCS_OK, "worker");
    CHECK(uct_query_components(&components, &num_components) == UCS_OK,
          "components");
    for (i = 0; i < num_components; ++i) {
        uct_component_attr_t ca = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        uct_component_query(components[i], &ca);
        if (!strcmp(ca.name, UCT_MC_UDP_TL_NAME)) {
            comp = components[i];
        }
    }
    CHECK(comp != NULL, "no mc_udp component (is libuct_o2m loaded?)");

    CHECK(uct_md_config_read(comp, NULL, NULL, &md_config) == UCS_OK, "md");
    CHECK(uct_md_open(comp, UCT_MC_UDP_TL_NAME, md_config, &md) == UCS_OK,
          "md open");
    uct_config_release(md_config);
    CHECK(uct_md_iface_config_read(md, UCT_MC_UDP_TL_NAME, NULL, NULL,
                                   &if_config) == UCS_OK, "config");

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = UCT_MC_UDP_TL_NAME;
    params.mode.device.dev_name = "eth0";
    status = uct_iface_open(md, worker, &params, if_config, &iface);
    CHECK(status == UCS_OK, "iface open: %s", ucs_status_string(status));
    uct_config_release(if_config);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    CHECK(uct_iface_query(iface, &attr) == UCS_OK, "query");
    CHECK(uct_iface_set_am_handler(iface, AM_ID, am_cb, NULL, 0) == UCS_OK,
          "am handler");
    g_max = attr.cap.am.max_bcopy;

    /* Device address (4 bytes) then interface address (2 bytes) */
    CHECK(uct_iface_get_device_address(iface, (void*)addr) == UCS_OK, "da");
    CHECK(uct_iface_get_address(iface, (void*)(addr + 4)) == UCS_OK, "ia");
    all = malloc(8 * size);
    MPI_Allgather(addr, 8, MPI_BYTE, all, 8, MPI_BYTE, MPI_COMM_WORLD);

    memset(&gp, 0, sizeof(gp));
    gp.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
    gp.group_id        = strtoull(argv[3], NULL, 0);
    gp.size            = size;
    gp.my_index        = rank;
    gp.root_index      = 0;
    gp.root_dev_addr   = (const void*)all;
    gp.root_iface_addr = (const void*)(all + 4);
    status = uct_o2m_ep_create(iface, &gp, &ep);
    CHECK(status == UCS_OK, "group: %s", ucs_status_string(status));

    buf = malloc(g_max);
    if (rank == 0) {
        for (i = 0; i < count; ++i) {
            fill(buf, i);
            for (;;) {
                if (msg_len(i) <= attr.cap.am.max_short) {
                    status = uct_ep_am_short(ep, AM_ID, *(uint64_t*)buf,
                                             buf + 8, msg_len(i) - 8);
                } else {
                    size_t len  = msg_len(i);
                    ssize_t ret;

                    g_pack_buf = buf;
                    ret        = uct_ep_am_bcopy(ep, AM_ID, pack, &len, 0);
                    status     = (ret < 0) ? (ucs_status_t)ret : UCS_OK;
                }
                if (status != UCS_ERR_NO_RESOURCE) {
                    break;
                }
                uct_worker_progress(worker);
                CHECK(MPI_Wtime() < deadline, "send %u: deadline", i);
            }
            CHECK(status == UCS_OK, "send %u: %s", i,
                  ucs_status_string(status));
        }
        do {
            status = uct_ep_flush(ep, 0, NULL);
            uct_worker_progress(worker);
            CHECK(MPI_Wtime() < deadline, "flush: deadline");
        } while ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE));
        CHECK(status == UCS_OK, "flush: %s", ucs_status_string(status));
    } else {
        while (g_received < count) {
            uct_worker_progress(worker);
            CHECK(MPI_Wtime() < deadline, "received %u of %u: deadline",
                  g_received, count);
            CHECK(uct_o2m_ep_state(ep, &status) != UCT_O2M_EP_STATE_FAILED,
                  "group failed: %s", ucs_status_string(status));
        }
        CHECK(g_bad == 0, "%u of %u messages wrong", g_bad, count);
    }

    /* Members relay ACKs until the root's flush is done */
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    do {
        uct_worker_progress(worker);
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        CHECK(MPI_Wtime() < deadline, "final barrier: deadline");
    } while (!flag);

    CHECK(uct_mc_udp_iface_counters(iface, &c) == UCS_OK, "counters");
    CHECK(uct_mc_udp_iface_repair_stats(iface, &rep) == UCS_OK, "repairs");
    for (i = 0, hist = 0; i < UCT_MC_UDP_LAT_BUCKETS; ++i) {
        hist += rep.lat_hist[i];
    }
    /* the histogram holds every repair; a member that lost nothing (the
     * root) has none */
    CHECK((hist == rep.repaired) &&
          (rep.lat_sum_ns <= rep.repaired * rep.lat_max_ns) &&
          ((rep.repaired > 0) || (rep.lat_max_ns == 0)),
          "repair stats: %lu repaired, histogram %lu, sum %lu max %lu ns",
          rep.repaired, hist, rep.lat_sum_ns, rep.lat_max_ns);
    printf("rank %u: %s %u messages exact; rx %lu tx %lu paced %lu bad %lu "
           "engine-drops %lu nack %lu repair-ucast %lu repair-mcast %lu "
           "dup %lu repaired %lu repair-max %lu us\n", g_rank,
           (rank == 0) ? "sent" : "received",
           (rank == 0) ? count : g_received, c.rx_packets, c.tx_packets,
           c.tx_paced, c.rx_bad, c.rx_engine_drop, c.tx_nack,
           c.tx_repair_ucast, c.tx_repair_mcast, c.rx_dup, rep.repaired,
           rep.lat_max_ns / 1000);
    fflush(stdout);

    uct_ep_destroy(ep);
    uct_iface_close(iface);
    uct_md_close(md);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_release_component_list(components);
    free(buf);
    free(all);
    MPI_Finalize();
    return 0;
}
