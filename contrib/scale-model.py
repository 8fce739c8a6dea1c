#!/usr/bin/env python3
"""Predicted host-local latency of UCG's plans for many processes per host.

A first-order model (docs/performance.md, "Scale on paper"): the per-hop
costs are measured on a machine with ucx_o2m_perf and ucg_perf, the cost of
one more reader of a shared cache line (C) comes from published numbers,
since a machine with fewer cores than processes cannot show it.
--self-test checks the formulas against points worked out by hand.  Prints,
for 8-byte bcast and allreduce on one host of P processes, the critical
path (root's call to the last member's completion) of each plan, in us.
"""

import argparse
import math
import sys


def ceil_log(p, k):
    """Levels of a k-nomial tree over p members."""
    levels, reach = 0, 1
    while reach < p:
        reach *= k
        levels += 1
    return levels


class Model(object):
    def __init__(self, a):
        self.a = a

    def bcast_flat_sm(self, p, c):
        # one sm_bcast group: one write, read by the p-1 members; the last
        # reader's copy of the line comes (p-2) requests after the first
        a = self.a
        return a.ucg + a.hop + (p - 2) * c

    def bcast_two_level_sm(self, p, c):
        # root -> r leaders -> their r members (not a plan UCG builds yet)
        a = self.a
        r = math.ceil(math.sqrt(p))
        return a.ucg + a.phase + 2 * a.hop + 2 * max(r - 2, 0) * c

    def bcast_p2p_tree(self, p):
        # k-nomial tree of point-to-point messages: a sender sends k-1
        # messages per level, back to back
        a = self.a
        return a.ucg_p2p + ceil_log(p, a.radix) * (
            a.p2p + (a.radix - 2) * a.gap)

    def fanin(self, p, batched):
        # batched: p-1 atomic additions on one counter line, serialized;
        # centralized: the root polls p-1 stamps, misses overlapped by mlp
        a = self.a
        serial = (p - 2) * a.atomic if batched else 0.0
        return a.hop + serial + (p - 1) * a.line / a.mlp

    def allreduce_sm(self, p, c):
        a = self.a
        if p <= a.allreduce_max_ppn:
            # sm_allreduce: every member fans out its vector and reads the
            # p-1 others' (misses overlapped), each line read by p-1
            return a.ucg + a.hop + (p - 2) * (a.line / a.mlp + c) + \
                   (p - 1) * a.reduce
        batched = p <= a.batched_max_ppn
        return a.phase + self.fanin(p, batched) + self.bcast_flat_sm(p, c)

    def allreduce_p2p_rd(self, p):
        # recursive doubling: log2(p) exchanges, each one message each way
        a = self.a
        return a.ucg_p2p + ceil_log(p, 2) * (a.p2p + a.reduce)


def self_test():
    """The formulas against points worked out by hand."""
    a = argparse.Namespace(line=0.03, hop=0.06, p2p=0.1, gap=0.05, ucg=0.1,
                           ucg_p2p=0.04, phase=0.04, atomic=0.03,
                           reduce=0.01, mlp=3.0, radix=4, batched_max_ppn=8,
                           allreduce_max_ppn=4)
    m = Model(a)
    near = lambda x, y: abs(x - y) < 1e-9
    checks = [
        (ceil_log(1, 4), 0), (ceil_log(4, 4), 1), (ceil_log(5, 4), 2),
        (ceil_log(64, 4), 3), (ceil_log(65, 4), 4), (ceil_log(64, 2), 6),
        # one receiver: UCG's cost and one hop, no reader contention
        (m.bcast_flat_sm(2, 0.02), 0.16),
        (m.bcast_flat_sm(10, 0.02), 0.16 + 8 * 0.02),
        # P=16: r=4 leaders, two hops, 2 extra readers per level
        (m.bcast_two_level_sm(16, 0.02), 0.1 + 0.04 + 0.12 + 4 * 0.02),
        # P=16, k=4: two levels of 1 + 2 back-to-back sends
        (m.bcast_p2p_tree(16), 0.04 + 2 * (0.1 + 2 * 0.05)),
        # P=4: sm_allreduce, one hop
        (m.allreduce_sm(4, 0.02), 0.1 + 0.06 + 2 * (0.01 + 0.02) + 3 * 0.01),
        # P=8: batched fan-in (6 serialized atomics) + flat fan-out
        (m.allreduce_sm(8, 0.02),
         0.04 + (0.06 + 6 * 0.03 + 7 * 0.01) + (0.16 + 6 * 0.02)),
        # P=9: centralized fan-in, no serialized atomics
        (m.allreduce_sm(9, 0.02),
         0.04 + (0.06 + 8 * 0.01) + (0.16 + 7 * 0.02)),
        (m.allreduce_p2p_rd(8), 0.04 + 3 * 0.11),
    ]
    bad = [i for i, (got, want) in enumerate(checks) if not near(got, want)]
    for i in bad:
        print('self-test: check %d: got %r, want %r' % ((i,) + checks[i]))
    if bad:
        return 1
    print('self-test: %d checks passed' % len(checks))
    return 0


def main(argv):
    if argv == ['--self-test']:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--line', type=float, default=0.026,
                    help='cache line one-way, us (ucx_o2m_perf -t cl)')
    ap.add_argument('--hop', type=float, default=0.064,
                    help='8-byte fan-out to one receiver, us '
                         '(ucx_o2m_perf -t fanout, N=2)')
    ap.add_argument('--p2p', type=float, default=0.085,
                    help='8-byte point-to-point one-way, us (posix column)')
    ap.add_argument('--gap', type=float, default=0.060,
                    help='one more back-to-back point-to-point send, us')
    ap.add_argument('--ucg', type=float, default=0.100,
                    help="UCG's cost per collective beyond the hop, us")
    ap.add_argument('--ucg-p2p', dest='ucg_p2p', type=float, default=0.040,
                    help="UCG's cost per point-to-point collective, us")
    ap.add_argument('--phase', type=float, default=0.040,
                    help='one more phase of a plan, us')
    ap.add_argument('--atomic', type=float, default=None,
                    help='contended atomic addition, us (default: --line)')
    ap.add_argument('--reduce', type=float, default=0.005,
                    help='reduction of 8 bytes, us')
    ap.add_argument('--mlp', type=float, default=6.0,
                    help='cache misses a core overlaps when polling lines')
    ap.add_argument('--radix', type=int, default=4,
                    help='k-nomial radix (UCX_UCG_KNOMIAL_RADIX)')
    ap.add_argument('--batched-max-ppn', dest='batched_max_ppn', type=int,
                    default=8, help='UCX_UCG_SM_BATCHED_MAX_PPN')
    ap.add_argument('--allreduce-max-ppn', dest='allreduce_max_ppn',
                    type=int, default=4,
                    help='UCX_UCG_SM_ALLREDUCE_MAX_PPN')
    ap.add_argument('-C', '--reader', type=float, action='append',
                    help='one more reader of a shared line, us '
                         '(repeatable; default 0.005 and 0.015)')
    ap.add_argument('-P', '--ppn', default='3,4,8,16,32,48,64,128',
                    help='processes per host, comma-separated')
    a = ap.parse_args(argv)
    if a.atomic is None:
        a.atomic = a.line
    readers = a.reader or [0.005, 0.015]
    try:
        ppn = [int(x) for x in a.ppn.split(',')]
    except ValueError:
        ap.error('--ppn: comma-separated integers expected')
    if any(p < 2 for p in ppn) or a.radix < 2 or a.mlp <= 0:
        ap.error('--ppn values and --radix must be at least 2, --mlp > 0')

    m = Model(a)

    def line(cells):
        print('| ' + ' | '.join(cells) + ' |')

    def table(head):
        line(head)
        line(['---'] * len(head))

    print('8-byte bcast on one host, critical path, us')
    head = ['P'] + ['flat sm C=%g ns' % (c * 1000) for c in readers] + \
           ['2-level sm C=%g ns' % (c * 1000) for c in readers] + \
           ['p2p k=%d' % a.radix]
    table(head)
    for p in ppn:
        row = [str(p)]
        row += ['%.2f' % m.bcast_flat_sm(p, c) for c in readers]
        row += ['%.2f' % m.bcast_two_level_sm(p, c) for c in readers]
        row += ['%.2f' % m.bcast_p2p_tree(p)]
        line(row)
    print()
    print('8-byte allreduce on one host (fan-in + fan-out; p2p: recursive '
          'doubling), critical path, us')
    head = ['P'] + ['sm C=%g ns' % (c * 1000) for c in readers] + ['p2p rd']
    table(head)
    for p in ppn:
        row = [str(p)]
        row += ['%.2f' % m.allreduce_sm(p, c) for c in readers]
        row += ['%.2f' % m.allreduce_p2p_rd(p)]
        line(row)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
