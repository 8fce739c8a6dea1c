/**
 * UCG definitions shared by the planner, the executor and the tools: the
 * wire formats (UCP tag layout, header of the sm messages), the limits they
 * imply, and the few facts about a collective type that both the planner
 * and the executor need.  Nothing here depends on a context or a group, so
 * the planner can be built and printed without the executor.
 */
#ifndef UCG_DEF_H_
#define UCG_DEF_H_

#include "api/ucg.h"
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <stddef.h>
#include <stdint.h>

/* -------------------------------------------------------------------------
 * Point-to-point messages go over UCP tag matching.  Tag layout:
 *   [63:48] group id   [47:32] collective sequence
 *   [31:20] phase index (4 bits) and algorithm step (8 bits)
 *   [19:0]  source rank
 * Messages with the same tag between two members are matched in order, so
 * fragments of one step may share a tag.  Phase, step and source all ones
 * (no plan has 16 phases): the abort message of that collective
 * (ucg_coll.c).
 * ---------------------------------------------------------------------- */
#define UCG_TAG_SRC_BITS   20
#define UCG_TAG_STEP_BITS  8
#define UCG_TAG_MAX_RANKS  (1u << UCG_TAG_SRC_BITS)

/** Bits of a group's epoch (ucg_group_t::epoch) in the sm header */
#define UCG_GROUP_EPOCH_BITS 24

/** Header of every message on UCG's sm_bcast / sm_incast interfaces */
typedef struct ucg_sm_hdr {
    uint16_t group_id;
    uint16_t seq;       /* collective sequence */
    uint32_t phase : 8; /* phase index in the plan */
    uint32_t epoch : UCG_GROUP_EPOCH_BITS; /* of the group: a message of an
                                              earlier group with the same
                                              id is not taken */
    uint32_t frag;      /* fragment index in the phase, with
                           UCG_SM_FRAG_LAST on the sender's last one */
    uint32_t src;       /* SM_ALLREDUCE: sender's index in its set */
} UCS_S_PACKED ucg_sm_hdr_t; /* 16 bytes: data after it keeps the alignment
                                of the header's start.  Packed because a
                                transport may place it at any address (mc_udp
                                puts its AM id in the byte before it): the
                                fields are read and written without
                                assuming alignment */

/* ucg_sm_hdr_t.frag of the last fragment a sender sends in a phase.  A
 * sender whose count is smaller by whole fragments sends nothing else that
 * differs from what its receivers expect: without the mark they would wait
 * for fragments that never come */
#define UCG_SM_FRAG_LAST (1u << 31)


/** Whether a collective of @a type has a root (ucg_coll_params_t::root) */
static inline int ucg_coll_type_is_rooted(ucg_coll_type_t type)
{
    return (type == UCG_COLL_BCAST) || (type == UCG_COLL_REDUCE) ||
           (type == UCG_COLL_GATHER) || (type == UCG_COLL_SCATTER) ||
           (type == UCG_COLL_GATHERV) || (type == UCG_COLL_SCATTERV);
}

/** Whether a collective of @a type moves blocks of a count per member
 *  (ucg_coll_vec.c) */
static inline int ucg_coll_type_is_vblock(ucg_coll_type_t type)
{
    return (type == UCG_COLL_GATHERV) || (type == UCG_COLL_SCATTERV) ||
           (type == UCG_COLL_ALLGATHERV);
}

/** Whether a collective of @a type reduces (has an op) */
static inline int ucg_coll_type_is_reduction(ucg_coll_type_t type)
{
    return (type == UCG_COLL_REDUCE) || (type == UCG_COLL_ALLREDUCE) ||
           (type == UCG_COLL_REDUCE_SCATTER) ||
           (type == UCG_COLL_REDUCE_SCATTER_BLOCK) ||
           (type == UCG_COLL_SCAN) || (type == UCG_COLL_EXSCAN);
}

/** Whether a collective of @a type scatters the reduction of its vectors
 *  (ucg_coll_t::dblk) */
static inline int ucg_coll_type_is_reduce_scatter(ucg_coll_type_t type)
{
    return (type == UCG_COLL_REDUCE_SCATTER) ||
           (type == UCG_COLL_REDUCE_SCATTER_BLOCK);
}

/**
 * A fragment of at most @a frag bytes rounded down to whole elements of
 * @a elem_size (> 0) bytes, and at least one element: a reduction combines
 * whole elements only, so its fragments (and chunks) must hold them.
 */
static inline size_t ucg_frag_whole_elems(size_t frag, size_t elem_size)
{
    return ucs_max(frag - (frag % elem_size), elem_size);
}

#endif
