#!/usr/bin/env python3
"""Fits a platform's calibration (the parameters no datasheet gives) on the fitting half of the
step-time validation rows, and prints the fit; with --write, stores it in the platform file and
in the catalog platforms that take that fit without rows of their own (h200-sxm-ndr takes
h100-sxm-ndr's: its sources say "as h100-sxm-ndr").

    results/calibrate.py [--platform h100-sxm-ndr|a100-sxm-hdr] [--build build] [--write]
    results/calibrate.py --runs SCENARIO|FOLDER ... [--platform NAME|FILE] --out FILE [--jobs N]

The second form fits a platform to one's own cluster: the scenario files of its measured runs
(their "published" step times; `trainsim validate SCENARIO` compares them as they stand), every
expressed row fitted, the parameters left unfitted kept at the platform's values, and the
calibrated copy written to --out (never into the catalog's platform, which serves every row of
the published reference sets). Where runs of dense models also give their measured peak
(max_allocated_gib), memory.allocated_overhead_MiB is set to the median of measured minus
predicted without it, as `trainsim validate` fits it.

Parameters (the platform file's "calibration" block; see README, Accuracy):
  sustained_compute  share of the kernel database's rate that GEMMs and attention sustain in a step
  gpu_speed_spread   relative spread of one GPU's speed; a synchronous step waits for the slowest
  compute_slowdown   (the "overlap" block) how much slower compute runs beside communication
  sustained_fp8_gemm further share of their database rate that FP8 GEMMs sustain in a step
The fit minimises the mean absolute log error of predicted against measured step time over the
rows of the fitting half only (the split is fixed: README, Accuracy), by Nelder-Mead from the
neutral values, restarted from its best point until a restart gains nothing. Only the fitting
half's rows are priced (a copy of the reference holding only them).

The band (residual_p10, residual_p90) holds 80 % of predictions: of the residuals
measured / predicted - 1 of the fitting rows, each predicted by the parameters fitted without it
(FOLDS folds of the fitting rows, dealt by the SHA-256 of their names, each fitted afresh on the
others), the order statistics a conformal prediction interval takes (the floor(0.1 (n + 1))-th
smallest and the ceil(0.9 (n + 1))-th smallest), not the sample's 10th and 90th percentiles,
which hold fewer than 80 % of new rows when n is small. A conformal interval covers new rows only
if its residuals come from rows the model was not fitted on: the fit's own residuals are smaller
than a new row's error by what four parameters absorb of thirty rows. The locally weighted band
(residual_per_spread_p10/p90) takes the same order
statistics of each residual divided by its row's kernel spread (the P10-P90 width of the step's
kernels in the kernel database, time-weighted), and a prediction's band is then 1 + q x its own
kernel spread: the kernel database's p10/p90 set the band's width plan by plan, the residuals its
scale. Only the fitting half is read: the
checking half stays unseen, and `trainsim validate` reports both.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibration_stats import (  # noqa: E402  (beside this script)
    conformal_band, folds_of, residual_band, restarted_nelder_mead)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024.0 * 1024.0
# The step-time rows each platform is fitted on (their fitting half only).
REFERENCES = {
    "h100-sxm-ndr": [os.path.join("tests", "validation", "refdata",
                                  "nvidia_dgxc_benchmarking_h100.json")],
    "a100-sxm-hdr": [os.path.join("tests", "validation", "refdata",
                                  "narayanan2021_megatron_a100_table1_table2.json")],
}
# The arrays of rows a reference holds, in the order `trainsim validate` lists them.
ROW_ARRAYS = ("rows", "rows_table1", "rows_table2_ptdp_vs_zero3")
# At least this many fitting rows per fitted parameter: with fewer rows only the first
# parameters of PARAMETERS are fitted, the others stay neutral.
ROWS_PER_PARAMETER = 5
# (block, key, neutral value, lower bound, upper bound, scale of the first simplex step)
PARAMETERS = [
    ("calibration", "sustained_compute", 1.0, 0.5, 1.0, 0.1),
    ("calibration", "gpu_speed_spread", 0.0, 0.0, 0.1, 0.01),
    ("overlap", "compute_slowdown", 0.0, 0.0, 0.5, 0.1),
    ("calibration", "sustained_fp8_gemm", 1.0, 0.5, 1.0, 0.05),
]
UPPER = [p[4] for p in PARAMETERS]


def fail(message):
    """Bad input: the message on standard error and exit status 2, as trainsim's own."""
    print("calibrate.py: " + message, file=sys.stderr)
    sys.exit(2)


def apply(platform, values, band=None):
    """A copy of the platform file's JSON with the parameters set (and the band, if given); a
    block is added before "sources" when the file has none."""
    out = {}
    for key, value in platform.items():
        if key == "sources":
            for block, _, _, _, _, _ in PARAMETERS:
                out.setdefault(block, dict(platform.get(block, {})))
        out[key] = dict(value) if isinstance(value, dict) else value
    for block, _, _, _, _, _ in PARAMETERS:
        out.setdefault(block, {})
    for (block, key, _, _, _, _), v in zip(PARAMETERS, values):
        out[block][key] = v
    if band:
        out["calibration"].update(band)
    return out


class Fit:
    def __init__(self, trainsim, platform_path, references, runs=False, jobs=1):
        """`runs`: the references are scenario files or folders of one's own measured runs,
        every expressed row fitted (they sit in no half of a split)."""
        self.trainsim = trainsim
        with open(platform_path) as f:
            self.base = json.load(f)
        db = self.base.get("kernel_database")
        if db:  # the temporary copy lives elsewhere: name the database by its absolute path
            self.base["kernel_database"] = os.path.join(
                os.path.dirname(os.path.abspath(platform_path)), db)
        self.evaluations = 0
        self.tmp = tempfile.TemporaryDirectory()
        self.half = "" if runs else "fit"
        self.jobs = jobs  # runs replayed at once by `trainsim validate --jobs`
        if runs:
            self.references = [os.path.abspath(r) for r in references]
        else:
            self.references = [self.fitting_rows_only(r) for r in references]

    def fitting_rows_only(self, reference):
        """A copy of `reference` with only its fitting half's rows (beside links to the files it
        reads next to it): the fit then prices only those, and the checking half is not even
        predicted. The reference itself where its row arrays do not match what `trainsim
        validate` lists, in order."""
        with open(os.path.join(ROOT, reference)) as f:
            data = json.load(f)
        listed = self.validate([reference], None)
        arrays = [k for k in ROW_ARRAYS if isinstance(data.get(k), list)]
        if not arrays or sum(len(data[k]) for k in arrays) != len(listed):
            return reference
        for k in arrays:
            rows, listed = listed[:len(data[k])], listed[len(data[k]):]
            data[k] = [row for row, r in zip(data[k], rows) if r.get("half") == "fit"]
        source = os.path.dirname(os.path.join(ROOT, reference))
        for name in os.listdir(source):
            target = os.path.join(self.tmp.name, name)
            if name != os.path.basename(reference) and not os.path.lexists(target):
                os.symlink(os.path.join(source, name), target)
        path = os.path.join(self.tmp.name, os.path.basename(reference))
        if os.path.lexists(path):
            os.unlink(path)
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def validate(self, references, platform_path):
        """Every row `trainsim validate` lists for these references, in order."""
        extra = ["--platform", platform_path] if platform_path else []
        if self.jobs > 1:
            extra += ["--jobs", str(self.jobs)]
        run = subprocess.run([self.trainsim, "validate", *references, *extra, "--format", "json"],
                             cwd=ROOT, capture_output=True, text=True)
        if run.returncode == 2:  # bad input (a run's scenario, say): trainsim's own message
            fail("trainsim validate refused the rows: " + run.stderr.strip())
        run.check_returncode()
        return [r for s in json.loads(run.stdout)["validation"]
                if s.get("quantity", "step_time") == "step_time" for r in s["rows"]]

    def memory_overhead(self, platform_path):
        """The median over the measured peaks of dense models of measured minus predicted without
        the platform's allocated overhead (`trainsim validate`'s fit of that overhead), in MiB,
        and how many rows it is over; None where no run measured its peak."""
        run = subprocess.run([self.trainsim, "validate", *self.references, "--platform",
                              platform_path, "--format", "json"],
                             cwd=ROOT, capture_output=True, text=True, check=True)
        for s in json.loads(run.stdout)["validation"]:
            if s.get("quantity") == "peak_memory" and s["overhead_fit_rows"] > 0:
                return s["overhead_fit_bytes"] / MIB, s["overhead_fit_rows"]
        return None

    def rows(self, values, half="default"):
        """(measured, predicted, kernel spread, name) of the expressed rows of `half` (the fitted
        ones by default, None: all) under these parameter values."""
        if half == "default":
            half = self.half
        platform = apply(self.base, values)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(platform, f)
            path = f.name
        try:
            listed = self.validate(self.references, path)
        finally:
            os.unlink(path)
        self.evaluations += 1
        return [(r["measured_s"], r["predicted_s"], r.get("kernel_spread", 0.0), r["name"])
                for r in listed
                if "skipped" not in r and (half is None or r.get("half") == half)]

    def start(self):
        """Where the search starts: the neutral values (a platform fitted afresh on the published
        rows), or the platform's own (a platform adjusted to measured runs)."""
        return [p[2] for p in PARAMETERS] if self.half == "fit" else self.current()

    def current(self):
        """The platform's own values of the parameters (neutral where it has none)."""
        return [self.base.get(block, {}).get(key, neutral)
                for block, key, neutral, _, _, _ in PARAMETERS]

    def padded(self, values):
        """The first parameters as given, the rest at their neutral values (fitting a platform on
        the published rows) or at the platform's own (fitting it to measured runs)."""
        return padded(values, None if self.half == "fit" else self.current())

    def loss(self, values, leave_out=frozenset()):
        """Mean |log error| on the fitted rows (less the rows named in `leave_out`) with the
        first len(values) parameters set."""
        for (_, _, _, lo, hi, _), v in zip(PARAMETERS, values):
            if v < lo or v > hi:
                return float("inf")
        rows = [r for r in self.rows(self.padded(values)) if r[3] not in leave_out]
        return sum(abs(math.log(p / m)) for m, p, _, _ in rows) / len(rows)


def padded(values, rest=None):
    """The first parameters as given, the rest at their neutral values (or at `rest`'s)."""
    rest = rest if rest is not None else [p[2] for p in PARAMETERS]
    return list(values) + list(rest[len(values):])


def out_of_fold_rows(fit, folds, fitted):
    """(measured, predicted, kernel spread) of every fitting row, predicted by the parameters
    fitted (from the neutral values, as the full fit) on the other folds only."""
    x0 = fit.start()[:fitted]
    steps = [p[5] for p in PARAMETERS[:fitted]]
    out = []
    for i, fold in enumerate(folds):
        best, _ = restarted_nelder_mead(lambda v, fold=fold: fit.loss(v, fold), x0, steps,
                                        UPPER[:fitted])
        out += [(m, p, w) for m, p, w, name in fit.rows(fit.padded(best)) if name in fold]
        print("  fold %d of %d (%d rows held out): %s" %
              (i + 1, len(folds), len(fold), " ".join("%.4f" % v for v in best)), flush=True)
    return out


def fit_parameters(fit, what):
    """The fit, printed as it goes: (parameters, loss, rows, parameters fitted, folds, band)."""
    x0 = fit.start()
    print("fitting %s" % what)
    n = len(fit.rows(x0))
    if n == 0:
        fail("no expressed step-time row to fit on")
    fitted = min(len(PARAMETERS), max(1, n // ROWS_PER_PARAMETER))
    print("%s: mean |log error| %.4f on %d rows; fitting %d of %d parameters" %
          ("neutral" if fit.half == "fit" else "as the platform stands", fit.loss(x0), n, fitted,
           len(PARAMETERS)))
    best, loss = restarted_nelder_mead(fit.loss, x0[:fitted], [p[5] for p in PARAMETERS[:fitted]],
                                       UPPER[:fitted])
    best = fit.padded([round(v, 4) for v in best])
    rows = fit.rows(best)
    in_sample = residual_band([r[:3] for r in rows])
    print("fit after %d evaluations: mean |log error| %.4f on %d rows" %
          (fit.evaluations, loss, len(rows)))
    for (block, key, _, _, _, _), v in zip(PARAMETERS, best):
        print("  %-30s %s" % (block + "." + key, v))
    folds = folds_of([r[3] for r in rows])
    print("band: each fitting row predicted by the parameters fitted on the other %d folds" %
          (len(folds) - 1), flush=True)
    band = residual_band(out_of_fold_rows(fit, folds, fitted))
    for k, v in band.items():
        print("  %-30s %s (on the fit's own residuals: %s)" %
              ("calibration." + k, v, in_sample[k]))
    return best, loss, rows, fitted, folds, band


def band_source(how, folds):
    return how + ("; the band bounds measured / predicted - 1 on those rows, "
                  "each predicted by the parameters fitted on the other "
                  "folds (%d), by the order statistics of an 80 %% conformal "
                  "prediction interval, plain (residual_p10/p90) and divided "
                  "by each row's kernel spread (residual_per_spread_p10/p90, "
                  "locally weighted)" % len(folds))


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def calibrate_catalog(args, trainsim):
    """A catalog platform fitted on the fitting half of its published step-time rows."""
    platform_path = os.path.join(ROOT, "platforms", args.platform + ".json")
    if args.platform not in REFERENCES:
        fail("no step-time rows to fit %s on (known: %s)" %
                 (args.platform, ", ".join(REFERENCES)))
    references = REFERENCES[args.platform]
    fit = Fit(trainsim, platform_path, references)
    best, loss, rows, fitted, folds, band = fit_parameters(
        fit, "%s on the fitting half of %s" % (args.platform, ", ".join(references)))
    if not args.write:
        return
    with open(platform_path) as f:
        platform = apply(json.load(f), best, band)
    sources = platform.setdefault("sources", {})
    how = ("fit: results/calibrate.py --write on the fitting half of the step-time validation "
           "rows (%s; the fixed split of README, Accuracy): %d rows, mean |log error| %.4f" %
           (", ".join(references), len(rows), loss))
    if fitted < len(PARAMETERS):
        how += ("; only %s fitted (at least %d rows per parameter), %s neutral" %
                (", ".join(p[1] for p in PARAMETERS[:fitted]), ROWS_PER_PARAMETER,
                 ", ".join(p[1] for p in PARAMETERS[fitted:])))
    sources["overlap.compute_slowdown"] = how + ", together with the calibration block"
    sources["calibration"] = band_source(how, folds)
    write_json(platform_path, platform)
    print("wrote %s" % os.path.relpath(platform_path, ROOT))
    for path in platforms_taking_the_fit_of(args.platform):
        with open(path) as f:
            other = json.load(f)
        other["calibration"] = platform["calibration"]
        other["overlap"] = platform["overlap"]
        write_json(path, other)
        print("wrote %s (it takes %s's fit)" % (os.path.relpath(path, ROOT), args.platform))


def platforms_taking_the_fit_of(name):
    """The catalog platforms that have no rows of their own and take `name`'s fit as it stands
    (their sources say "as NAME" for the calibration): a refit of NAME is theirs too."""
    folder = os.path.join(ROOT, "platforms")
    out = []
    for file in sorted(os.listdir(folder)):
        path = os.path.join(folder, file)
        if not file.endswith(".json") or file == name + ".json":
            continue
        with open(path) as f:
            taken = json.load(f).get("sources", {}).get("calibration", "")
        if taken.startswith("as %s," % name) or taken.startswith("as %s " % name):
            out.append(path)
    return out


def platform_file(spec):
    """A platform given as a file, or by its catalog name."""
    if os.path.isfile(spec):
        return spec
    path = os.path.join(ROOT, "platforms", spec + ".json")
    if not os.path.isfile(path):
        fail("--platform: no such file or catalog platform: %s" % spec)
    return path


def calibrate_runs(args, trainsim):
    """A copy of a platform fitted to one's own measured runs, written to --out."""
    if args.write:
        fail("--write stores a fit of the published rows into the catalog's "
                 "platform; a fit to --runs goes to --out FILE")
    if not args.out:
        fail("--runs needs --out FILE: the calibrated platform file to write")
    source = platform_file(args.platform)
    fit = Fit(trainsim, source, args.runs, runs=True, jobs=args.jobs)
    best, loss, rows, fitted, folds, band = fit_parameters(
        fit, "%s to the measured runs of %s" % (args.platform, ", ".join(args.runs)))
    platform = dict(fit.base)
    platform["calibration"] = {k: v for k, v in platform.get("calibration", {}).items()
                               if not k.startswith("residual_")}
    platform = apply(platform, best, band)
    out = os.path.abspath(args.out)
    if platform.get("kernel_database"):
        platform["kernel_database"] = os.path.relpath(platform["kernel_database"],
                                                      os.path.dirname(out))
    platform["name"] = os.path.splitext(os.path.basename(out))[0]
    platform["description"] = ("%s Calibrated to %d measured runs (results/calibrate.py --runs)."
                               % (platform.get("description", ""), len(rows))).strip()
    how = ("fit: results/calibrate.py --runs %s from %s: %d rows, mean |log error| %.4f; "
           "%s fitted (at least %d rows per parameter), the rest as %s has them" %
           (" ".join(args.runs), args.platform, len(rows), loss,
            ", ".join(p[1] for p in PARAMETERS[:fitted]), ROWS_PER_PARAMETER, args.platform))
    sources = platform.setdefault("sources", {})
    sources["overlap.compute_slowdown"] = how + ", together with the calibration block"
    sources["calibration"] = band_source(how, folds)
    memory = fit.memory_overhead(source)
    if memory:
        platform.setdefault("memory", {})["allocated_overhead_MiB"] = round(memory[0], 1)
        sources["memory.allocated_overhead_MiB"] = (
            "fit: results/calibrate.py --runs %s from %s: the median over the %d measured peaks "
            "(max_allocated_gib) of dense models of measured minus predicted without this term "
            "(`trainsim validate` prints it)" % (" ".join(args.runs), args.platform, memory[1]))
        print("memory.allocated_overhead_MiB = %.1f (median over %d measured peaks)" % memory)
    write_json(out, platform)
    print("wrote %s" % args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default="h100-sxm-ndr",
                    help="a catalog platform (or, with --runs, a platform file)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--write", action="store_true", help="store the fit in the platform file")
    ap.add_argument("--runs", nargs="+", metavar="SCENARIO",
                    help="fit to one's own measured runs: scenario files (or folders of them) "
                         "whose \"published\" array holds the measured step times")
    ap.add_argument("--out", metavar="FILE", help="with --runs: the platform file to write")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="with --runs: runs replayed at once (default: the cores, up to 8)")
    args = ap.parse_args()
    trainsim = os.path.join(os.path.abspath(args.build), "trainsim")
    if args.runs:
        return calibrate_runs(args, trainsim)
    if args.out:
        fail("--out is for --runs; --write stores a catalog platform's fit")
    return calibrate_catalog(args, trainsim)


if __name__ == "__main__":
    sys.exit(main())
