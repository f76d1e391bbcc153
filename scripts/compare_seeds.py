"""Whether two sets of runs (the same comparison over seeds) differ in a logged metric: each run's last value of the
metric, mean +- sd a side, the difference of the means with Welch's t (and its Welch-Satterthwaite degrees of freedom)
and an exact two-sided permutation test (every split of the pooled values; for bimodal scores, as a run that leaves a
plateau or does not, where a t-test's normal model fails), and with --above X how many runs a side end above X with
Fisher's exact test on those counts.
Usage: python3 scripts/compare_seeds.py METRIC RUN... -- RUN... [--above X]
  METRIC: a dotted key of metrics.jsonl, e.g. eval.exact_match or test.accuracy (its last row that has it)"""
import itertools
import json
import math
import statistics
import sys


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def last_value(run, metric):
    value, path = None, f"{run}/metrics.jsonl"
    try:
        with open(path) as f:
            for line_no, line in enumerate(f, 1):
                try:
                    row = json.loads(line) if line.strip() else {}
                except json.JSONDecodeError as e:
                    fail(f"{path}:{line_no}: not JSON ({e.msg})")
                for key in metric.split("."):
                    row = row.get(key) if isinstance(row, dict) else None
                if isinstance(row, (int, float)) and not isinstance(row, bool):
                    value = row
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if value is None:
        fail(f"{path}: no row has {metric}")
    return float(value)


def permutation_p(a, b):
    pool, total = a + b, sum(a) + sum(b)
    def difference(x_sum):  # the mean of a split's first len(a) values minus the mean of the rest
        return x_sum / len(a) - (total - x_sum) / len(b)
    observed = abs(difference(sum(a)))
    splits = itertools.combinations(pool, len(a))  # walked, not stored: 184,756 at 10 a side
    return sum(abs(difference(sum(x))) >= observed - 1e-9 for x in splits) / math.comb(len(pool), len(a))


def welch(a, b):
    """Welch's t of mean(a) - mean(b) and its Welch-Satterthwaite degrees of freedom."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return math.nan, math.nan
    t = (statistics.mean(a) - statistics.mean(b)) / math.sqrt(va + vb)
    return t, (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))


def fisher_p(k_a, n_a, k_b, n_b):
    k, n = k_a + k_b, n_a + n_b
    def table(i):
        return math.comb(k, i) * math.comb(n - k, n_a - i) / math.comb(n, n_a)
    observed = table(k_a)
    return sum(table(i) for i in range(max(0, k - n_b), min(k, n_a) + 1) if table(i) <= observed * (1 + 1e-9))


def main():
    args = sys.argv[1:]
    above = None
    if "--above" in args:
        i = args.index("--above")
        above = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 4 or "--" not in args:
        fail(__doc__)
    metric, runs = args[0], args[1:]
    a_runs, b_runs = runs[:runs.index("--")], runs[runs.index("--") + 1:]
    if len(a_runs) < 2 or len(b_runs) < 2:
        fail("compare_seeds.py: at least two runs a side")
    a, b = [last_value(r, metric) for r in a_runs], [last_value(r, metric) for r in b_runs]
    for name, values in (("A", a), ("B", b)):
        print(f"{name}: {statistics.mean(values):.2f} +- {statistics.stdev(values):.2f} over {len(values)} runs: "
              + ", ".join(f"{v:.2f}" for v in values))
    t, df = welch(a, b)
    print(f"difference of means {statistics.mean(a) - statistics.mean(b):.2f}, Welch's t {t:.2f} ({df:.1f} degrees of "
          f"freedom), exact permutation p (two-sided, {math.comb(len(a) + len(b), len(a))} splits) "
          f"{permutation_p(a, b):.3f}")
    if above is not None:
        k_a, k_b = sum(v > above for v in a), sum(v > above for v in b)
        print(f"above {above:g}: {k_a} of {len(a)} against {k_b} of {len(b)}, Fisher's exact p (two-sided) "
              f"{fisher_p(k_a, len(a), k_b, len(b)):.3f}")


if __name__ == "__main__":
    main()
