#!/usr/bin/env python3
"""Summarize and plot contrib/bench-mpi.sh results.

Input: the raw CSV written by bench-mpi.sh, columns
  config,rep,coll,bytes,avg_us,min_us,max_us,iterations
Each (config, coll, bytes) is summarized by the median over repetitions of
the OSU average latency, with the lowest and highest repetition.

Candidates and baselines: configurations whose name starts with "ucg" (or
those named with --candidates) are candidates; every other configuration is
a baseline (Open MPI's own: ob1 + tuned, pml ucx + tuned, han where it
qualifies).  At each size, each candidate is compared with the BEST
baseline there (lowest median), named in the table:

  ratio  = candidate median / best baseline median
  noise  = A/A spread of the best baseline at that size: (highest - lowest
           repetition) / median, i.e. how far apart two measurements of the
           same configuration came in this run (0 with one repetition)
  verdict:
    SLOWER  ratio > 1 + noise: slower than the best baseline beyond what the
            baseline differs from itself
    ~       1 < ratio <= 1 + noise: slower, but within the A/A noise
    ok      ratio <= 1

  plot-mpi.py RAW.csv --table [--candidates a,b] [--summary OUT.csv]
                      [--verdict OUT.csv] [--cacheline LINES.csv]
  plot-mpi.py RAW.csv --png OUT.png [--title TEXT]
  plot-mpi.py --self-test    checks the comparison on made-up data
--cacheline (bench-mpi.sh's bench-mpi-cacheline.csv: rep,cacheline_ns, the
time a cache line took between two CPUs before each repetition): when it
changed during the run (the slowest over twice the fastest: a VM whose vCPUs
were moved), the repetitions are split where the line's time jumps most and
a table is added for each part, its medians over those repetitions only (the
summary and verdict CSVs stay those of the whole run).
Exit status with --table: 0, also when a size is SLOWER (it is a report).
"""
import argparse
import csv
import statistics
import sys
from collections import OrderedDict, defaultdict


def load(path, reps=None):
    """Statistics of the repetitions @reps (a set; None: all)"""
    data = defaultdict(list)        # (config, coll, bytes) -> [avg_us]
    configs, colls, sizes = OrderedDict(), OrderedDict(), set()
    with open(path, newline='') as f:
        for row in csv.DictReader(f):
            if reps is not None and int(row['rep']) not in reps:
                continue
            key = (row['config'], row['coll'], int(row['bytes']))
            data[key].append(float(row['avg_us']))
            configs[row['config']] = None
            colls[row['coll']] = None
            sizes.add(int(row['bytes']))
    stats = {k: (statistics.median(v), min(v), max(v), len(v))
             for k, v in data.items()}
    return stats, list(configs), list(colls), sorted(sizes)


def placements(path):
    """The repetitions in groups of alike cache-line times, each as
    (sorted reps, fastest ns, slowest ns): one group unless the slowest is
    over twice the fastest, else split at the largest jump between
    consecutive times"""
    lines = []
    with open(path, newline='') as f:
        for row in csv.DictReader(f):
            lines.append((float(row['cacheline_ns']), int(row['rep'])))
    lines.sort()
    if not lines or lines[-1][0] <= 2 * lines[0][0]:
        return [([r for _, r in lines], lines[0][0] if lines else 0,
                 lines[-1][0] if lines else 0)]
    cut = max(range(1, len(lines)),
              key=lambda i: lines[i][0] / max(lines[i - 1][0], 1e-9))
    return [(sorted(r for _, r in part), part[0][0], part[-1][0])
            for part in (lines[:cut], lines[cut:])]


def placement_tables(raw, lines_csv, names):
    """A table per group of placements() when there are several"""
    groups = placements(lines_csv)
    if len(groups) < 2:
        return
    print('\nA cache line took over twice as long in some repetitions (the '
          'vCPUs were moved,\nor the machine was loaded): the same tables '
          'over the repetitions of each part')
    for reps, lo, hi in groups:
        print('\n=== repetitions %s: a cache line in %.1f-%.1f ns ===' %
              (' '.join(map(str, reps)), lo, hi))
        stats, configs, colls, sizes = load(raw, set(reps))
        cand, base = split_configs(configs, names)
        table(stats, configs, colls, sizes, cand, base, None, None)


def fmt_size(b):
    for unit, shift in (('MiB', 20), ('KiB', 10)):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return '%d %s' % (b >> shift, unit)
    return '%d B' % b


def split_configs(configs, names):
    if names:
        cand = [c for c in configs if c in names]
    else:
        cand = [c for c in configs if c.startswith('ucg')]
    base = [c for c in configs if c not in cand]
    return cand, base


def best_baseline(stats, base, coll, b):
    """(name, median, noise) of the baseline with the lowest median"""
    best = None
    for c in base:
        s = stats.get((c, coll, b))
        if s is not None and (best is None or s[0] < best[1][0]):
            best = (c, s)
    if best is None:
        return None
    med, lo, hi, _ = best[1]
    return best[0], med, ((hi - lo) / med) if med > 0 else 0.0


def verdict_of(ratio, noise):
    if ratio > 1 + noise:
        return 'SLOWER'
    if ratio > 1:
        return '~'
    return 'ok'


def table(stats, configs, colls, sizes, cand, base, summary, verdict_csv):
    rows, verdicts = [], []
    print('\nbaselines: %s; candidates: %s' %
          (', '.join(base) or '-', ', '.join(cand) or '-'))
    print('ratio = candidate / best baseline at that size; noise = A/A '
          'spread of that baseline\n(highest - lowest repetition) / median; '
          'SLOWER: ratio > 1 + noise, ~: slower within noise')
    for coll in colls:
        print('\n%s: median over repetitions of the average latency (us)' %
              coll)
        head = '%10s' % 'size'
        for c in configs:
            head += ' | %9s' % c[:9]
        head += ' | %-9s %6s' % ('best', 'noise')
        for c in cand:
            head += ' | %9s %-6s' % (('%s/best' % c)[:9], '')
        print(head)
        print('-' * len(head))
        for b in sizes:
            if not any((c, coll, b) in stats for c in configs):
                continue
            line = '%10s' % fmt_size(b)
            for c in configs:
                s = stats.get((c, coll, b))
                line += ' | %9s' % ('-' if s is None else '%.2f' % s[0])
            best = best_baseline(stats, base, coll, b)
            if best is None:
                line += ' | %-9s %6s' % ('-', '-')
            else:
                line += ' | %-9s %5.0f%%' % (best[0][:9], 100 * best[2])
            for c in cand:
                s = stats.get((c, coll, b))
                if s is None or best is None or best[1] <= 0:
                    line += ' | %9s %-6s' % ('-', '')
                    continue
                ratio = s[0] / best[1]
                v = verdict_of(ratio, best[2])
                line += ' | %9.2f %-6s' % (ratio, '' if v == 'ok' else v)
                verdicts.append([c, coll, b, '%.3f' % s[0], best[0],
                                 '%.3f' % best[1], '%.3f' % ratio,
                                 '%.3f' % best[2], v])
            print(line)
            for c in configs:
                s = stats.get((c, coll, b))
                if s is not None:
                    ratio = ''
                    if best is not None and best[1] > 0:
                        ratio = '%.3f' % (s[0] / best[1])
                    rows.append([c, coll, b, '%.3f' % s[0], '%.3f' % s[1],
                                 '%.3f' % s[2], ratio, s[3]])
    slower = [v for v in verdicts if v[8] == 'SLOWER']
    print('\n%d of %d candidate points SLOWER than the best baseline beyond '
          'its A/A noise%s' % (len(slower), len(verdicts),
                               ':' if slower else ''))
    for v in slower:
        print('  %s %s %s: %s us vs %s %s us (%sx, noise %.0f%%)' %
              (v[0], v[1], fmt_size(v[2]), v[3], v[4], v[5], v[6],
               100 * float(v[7])))
    if summary:
        with open(summary, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['config', 'coll', 'bytes', 'median_avg_us',
                        'min_rep_us', 'max_rep_us', 'ratio_vs_best_baseline',
                        'repetitions'])
            w.writerows(rows)
    if verdict_csv:
        with open(verdict_csv, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['candidate', 'coll', 'bytes', 'median_avg_us',
                        'best_baseline', 'best_median_avg_us', 'ratio',
                        'noise', 'verdict'])
            w.writerows(verdicts)


def plot(stats, configs, colls, sizes, cand, base, png, title):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(colls), figsize=(6 * len(colls), 4.5),
                             squeeze=False)
    for ax, coll in zip(axes[0], colls):
        for c in configs:
            pts = [(b, stats[(c, coll, b)][0]) for b in sizes
                   if (c, coll, b) in stats]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        marker='o', markersize=3, label=c,
                        linewidth=1.8 if c in cand else 0.8)
        # candidates' sizes slower than the best baseline beyond its noise
        for c in cand:
            bad = []
            for b in sizes:
                s = stats.get((c, coll, b))
                best = best_baseline(stats, base, coll, b)
                if s and best and best[1] > 0 and \
                        verdict_of(s[0] / best[1], best[2]) == 'SLOWER':
                    bad.append((b, s[0]))
            if bad:
                ax.scatter([p[0] for p in bad], [p[1] for p in bad],
                           marker='x', s=60, color='red', zorder=5,
                           label='%s slower than best' % c)
        ax.set_xscale('log', base=2)
        ax.set_yscale('log')
        ax.set_xlabel('message size (bytes)')
        ax.set_ylabel('latency (us)')
        ax.set_title('MPI_' + coll.capitalize())
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print('plot written to %s' % png)


def write_raw(path, rows):
    """A raw CSV of bench-mpi.sh with @rows (config, rep, coll, bytes,
    avg_us): made-up runs of the self-tests"""
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['config', 'rep', 'coll', 'bytes', 'avg_us', 'min_us',
                    'max_us', 'iterations'])
        for c, rep, coll, b, v in rows:
            w.writerow([c, rep, coll, b, v, v, v, 100])


def self_test():
    """The verdicts of a made-up run: exits non-zero on a wrong one"""
    import io
    import os
    import tempfile
    from contextlib import redirect_stdout

    # (coll, bytes) -> {config: [avg_us per repetition]}
    runs = {
        # ucx best (0.85, spread 0.1/0.85 = 12 %); ucg 1.47x: SLOWER
        ('bcast', 8): {'default': [1.0, 1.1, 1.05], 'ucx': [0.8, 0.9, 0.85],
                       'ucg': [1.25, 1.2, 1.3]},
        # ucg 1.05x of ucx, within its 12 % spread: ~
        ('bcast', 16): {'default': [1.0, 1.1, 1.05], 'ucx': [0.8, 0.9, 0.85],
                        'ucg': [0.9, 0.89, 0.88]},
        # default best; ucg faster: ok
        ('bcast', 32): {'default': [1.0, 1.0, 1.0], 'ucx': [2.0, 2.0, 2.0],
                        'ucg': [0.5, 0.6, 0.4]},
        # no spread: a 1 % slower candidate is SLOWER
        ('reduce', 8): {'default': [1.0, 1.0, 1.0], 'ucx': [3.0, 3.0, 3.0],
                        'ucg': [1.01, 1.01, 1.01]},
        # a second candidate (ucg_flat) compared with the same best
        ('reduce', 16): {'default': [2.0, 2.0, 2.0], 'ucx': [1.0, 1.0, 1.0],
                         'ucg': [0.9, 0.9, 0.9],
                         'ucg_flat': [1.5, 1.5, 1.5]},
    }
    expect = {('ucg', 'bcast', 8): ('ucx', 'SLOWER'),
              ('ucg', 'bcast', 16): ('ucx', '~'),
              ('ucg', 'bcast', 32): ('default', 'ok'),
              ('ucg', 'reduce', 8): ('default', 'SLOWER'),
              ('ucg', 'reduce', 16): ('ucx', 'ok'),
              ('ucg_flat', 'reduce', 16): ('ucx', 'SLOWER')}
    tmp = tempfile.mkdtemp(prefix='plot-mpi-test.')
    raw, ver = os.path.join(tmp, 'raw.csv'), os.path.join(tmp, 'ver.csv')
    write_raw(raw, [(c, rep + 1, coll, b, v)
                    for (coll, b), cfgs in runs.items()
                    for c, vals in cfgs.items()
                    for rep, v in enumerate(vals)])
    stats, configs, colls, sizes = load(raw)
    cand, base = split_configs(configs, [])
    with redirect_stdout(io.StringIO()) as out:
        table(stats, configs, colls, sizes, cand, base, None, ver)
    got = {}
    with open(ver, newline='') as f:
        for row in csv.DictReader(f):
            got[(row['candidate'], row['coll'], int(row['bytes']))] = \
                (row['best_baseline'], row['verdict'])
    os.remove(raw)
    os.remove(ver)
    os.rmdir(tmp)
    bad = [(k, expect[k], got.get(k)) for k in expect if got.get(k) != expect[k]]
    if cand != ['ucg', 'ucg_flat'] or base != ['default', 'ucx'] or bad or \
            len(got) != len(expect) or \
            '3 of 6 candidate points SLOWER' not in out.getvalue():
        print(out.getvalue())
        sys.exit('plot-mpi self-test FAILED: candidates %s, baselines %s, '
                 'wrong verdicts (key, expected, got): %s' % (cand, base, bad))
    placement_self_test()
    print('plot-mpi self-test passed: %d verdicts, placements split' %
          len(got))


def placement_self_test():
    """A run whose vCPUs moved after its second repetition: ucg is slower
    than the baseline in the close placement, faster in the far one"""
    import io
    import os
    import tempfile
    from contextlib import redirect_stdout

    tmp = tempfile.mkdtemp(prefix='plot-mpi-test.')
    raw, lines = os.path.join(tmp, 'raw.csv'), os.path.join(tmp, 'lines.csv')
    reps = [(0.13, 0.18), (0.13, 0.19), (0.45, 0.35), (0.44, 0.34),
            (0.13, 0.18)]
    write_raw(raw, [(c, rep + 1, 'reduce', 8, v)
                    for rep, (dflt, ucg) in enumerate(reps)
                    for c, v in (('default', dflt), ('ucg', ucg))])
    with open(lines, 'w', newline='') as f:
        f.write('rep,cacheline_ns\n1,23.9\n2,24.4\n3,195.7\n4,204.1\n'
                '5,26.0\n')
    groups = placements(lines)
    with redirect_stdout(io.StringIO()) as out:
        placement_tables(raw, lines, [])
    for path in (raw, lines):
        with open(path, 'w') as f:
            f.write('rep,cacheline_ns\n1,23.9\n2,40.0\n')
    one = placements(lines)
    for path in (raw, lines):
        os.remove(path)
    os.rmdir(tmp)
    text = out.getvalue()
    want = [([1, 2, 5], 23.9, 26.0), ([3, 4], 195.7, 204.1)]
    if groups != want or len(one) != 1 or \
            'repetitions 1 2 5: a cache line in 23.9-26.0 ns' not in text or \
            'repetitions 3 4: a cache line in 195.7-204.1 ns' not in text or \
            text.count('1 of 1 candidate points SLOWER') != 1 or \
            text.count('0 of 1 candidate points SLOWER') != 1:
        print(text)
        sys.exit('plot-mpi self-test FAILED: placements %s (want %s), one '
                 'placement split into %d' % (groups, want, len(one)))


def main():
    if sys.argv[1:] == ['--self-test']:
        self_test()
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('csv')
    ap.add_argument('--table', action='store_true')
    ap.add_argument('--candidates', default='',
                    help='comma-separated candidate configurations '
                         '(default: those named ucg*)')
    ap.add_argument('--summary')
    ap.add_argument('--verdict')
    ap.add_argument('--png')
    ap.add_argument('--title', default='')
    ap.add_argument('--cacheline')
    a = ap.parse_args()
    stats, configs, colls, sizes = load(a.csv)
    if not stats:
        sys.exit('no data in %s' % a.csv)
    names = [n for n in a.candidates.split(',') if n]
    cand, base = split_configs(configs, names)
    if a.table:
        table(stats, configs, colls, sizes, cand, base, a.summary, a.verdict)
        if a.cacheline:
            placement_tables(a.csv, a.cacheline, names)
    if a.png:
        plot(stats, configs, colls, sizes, cand, base, a.png, a.title)


if __name__ == '__main__':
    main()
