/**
 * ucx-o2m: the one 64-bit mixing function of the plugin and UCG.
 *
 * Identifiers every member computes on its own from values they share
 * (UCG's group ids, mc_udp's multicast address of a group) go through it:
 * all processes of a job run the same build, so they agree.
 */
#ifndef UCT_O2M_MIX_H_
#define UCT_O2M_MIX_H_

#include <ucs/sys/compiler_def.h>

#include <stdint.h>


/**
 * splitmix64's finalizer: a bijection of 64-bit values in which every input
 * bit changes about half of the output bits.
 */
static UCS_F_ALWAYS_INLINE uint64_t uct_o2m_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

#endif
