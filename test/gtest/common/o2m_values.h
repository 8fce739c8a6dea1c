/**
 * ucx-o2m tests: every value of the enumerations of uct_o2m.h that the
 * tests run through (modes, operations, datatypes), and the names of the
 * tests parameterized by a mode.
 */
#ifndef O2M_TEST_O2M_VALUES_H_
#define O2M_TEST_O2M_VALUES_H_

extern "C" {
#include "uct_o2m.h"
}

#include <gtest/gtest.h>

#include <string>

namespace o2m_test {

/* The modes of the fan-out transport (sm_bcast) */
static const uct_o2m_mode_t bcast_modes[] = {
    UCT_O2M_MODE_BATCHED, UCT_O2M_MODE_CENTRALIZED
};

static const uct_o2m_mode_t all_modes[] = {
    UCT_O2M_MODE_BATCHED, UCT_O2M_MODE_CENTRALIZED, UCT_O2M_MODE_LOCKED,
    UCT_O2M_MODE_ATOMIC
};

static const uct_o2m_op_t all_ops[] = {
    UCT_O2M_OP_GATHER, UCT_O2M_OP_SUM,  UCT_O2M_OP_PROD, UCT_O2M_OP_MIN,
    UCT_O2M_OP_MAX,    UCT_O2M_OP_BAND, UCT_O2M_OP_BOR,  UCT_O2M_OP_BXOR,
    UCT_O2M_OP_LAND,   UCT_O2M_OP_LOR,  UCT_O2M_OP_LXOR
};

static const uct_o2m_dtype_t all_dtypes[] = {
    UCT_O2M_DT_INT8,  UCT_O2M_DT_UINT8,  UCT_O2M_DT_INT16, UCT_O2M_DT_UINT16,
    UCT_O2M_DT_INT32, UCT_O2M_DT_UINT32, UCT_O2M_DT_INT64, UCT_O2M_DT_UINT64,
    UCT_O2M_DT_FLOAT, UCT_O2M_DT_DOUBLE
};

/* A test parameterized by a mode is named after it */
static inline std::string
mode_param_name(const ::testing::TestParamInfo<uct_o2m_mode_t> &info)
{
    return uct_o2m_mode_name(info.param);
}

} // namespace o2m_test

#endif
