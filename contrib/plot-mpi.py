#!/usr/bin/env python3
"""Summarize and plot contrib/bench-mpi.sh results.

Input: the raw CSV written by bench-mpi.sh, columns
  config,rep,coll,bytes,avg_us,min_us,max_us,iterations
Each (config, coll, bytes) is summarized by the median over repetitions of
the OSU average latency.

  plot-mpi.py RAW.csv --table [--baseline NAME] [--summary OUT.csv]
  plot-mpi.py RAW.csv --png OUT.png [--title TEXT]
"""
import argparse
import csv
import statistics
import sys
from collections import OrderedDict, defaultdict


def load(path):
    data = defaultdict(list)        # (config, coll, bytes) -> [avg_us]
    configs, colls, sizes = OrderedDict(), OrderedDict(), set()
    with open(path, newline='') as f:
        for row in csv.DictReader(f):
            key = (row['config'], row['coll'], int(row['bytes']))
            data[key].append(float(row['avg_us']))
            configs[row['config']] = None
            colls[row['coll']] = None
            sizes.add(int(row['bytes']))
    med = {k: statistics.median(v) for k, v in data.items()}
    reps = {k: len(v) for k, v in data.items()}
    return med, reps, list(configs), list(colls), sorted(sizes)


def fmt_size(b):
    for unit, shift in (('MiB', 20), ('KiB', 10)):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return '%d %s' % (b >> shift, unit)
    return '%d B' % b


def table(med, reps, configs, colls, sizes, baseline, summary):
    if baseline not in configs:
        baseline = configs[0]
    rows = []
    for coll in colls:
        print('\n%s: median over repetitions of the average latency (us); '
              'ratio = config / %s' % (coll, baseline))
        head = '%10s' % 'size'
        for c in configs:
            head += ' | %12s' % c[:12]
            if c != baseline:
                head += ' %6s' % 'ratio'
        print(head)
        print('-' * len(head))
        for b in sizes:
            base = med.get((baseline, coll, b))
            line = '%10s' % fmt_size(b)
            for c in configs:
                v = med.get((c, coll, b))
                line += ' | %12s' % ('-' if v is None else '%.2f' % v)
                ratio = None
                if v is not None and base:
                    ratio = v / base
                if c != baseline:
                    line += ' %6s' % ('-' if ratio is None else
                                      '%.2f' % ratio)
                if v is not None:
                    rows.append([c, coll, b, '%.3f' % v,
                                 '' if ratio is None else '%.3f' % ratio,
                                 reps[(c, coll, b)]])
            if any((c, coll, b) in med for c in configs):
                print(line)
    if summary:
        with open(summary, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['config', 'coll', 'bytes', 'median_avg_us',
                        'ratio_vs_' + baseline, 'repetitions'])
            w.writerows(rows)


def plot(med, configs, colls, sizes, png, title):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(colls), figsize=(6 * len(colls), 4.5),
                             squeeze=False)
    for ax, coll in zip(axes[0], colls):
        for c in configs:
            pts = [(b, med[(c, coll, b)]) for b in sizes
                   if (c, coll, b) in med]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        marker='o', markersize=3, label=c)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('csv')
    ap.add_argument('--table', action='store_true')
    ap.add_argument('--baseline', default='default')
    ap.add_argument('--summary')
    ap.add_argument('--png')
    ap.add_argument('--title', default='')
    a = ap.parse_args()
    med, reps, configs, colls, sizes = load(a.csv)
    if not med:
        sys.exit('no data in %s' % a.csv)
    if a.table:
        table(med, reps, configs, colls, sizes, a.baseline, a.summary)
    if a.png:
        plot(med, configs, colls, sizes, a.png, a.title)


if __name__ == '__main__':
    main()
