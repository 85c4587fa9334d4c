"""results/calibrate.py's own arithmetic, against closed forms: the conformal band's order
statistics, the folds dealt by SHA-256, the Nelder-Mead search, the platform file it writes, and
(given a trainsim binary in TRAINSIM) the copy of a reference that holds only its fitting half and
a platform fitted to measured runs.
Run by ctest as `python3 -m unittest` from this folder."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "results"))
import calibrate  # noqa: E402


class ConformalBand(unittest.TestCase):
    def test_thirty_residuals_take_the_third_and_twenty_eighth(self):
        # a = 0.1: floor(0.1 x 31) = 3, ceil(0.9 x 31) = 28.
        residuals = [(7 * i) % 30 + 1 for i in range(30)]  # 1..30 shuffled
        self.assertEqual(calibrate.conformal_band(residuals), (3, 28))

    def test_five_residuals_clamp_to_the_extremes(self):
        # floor(0.1 x 6) = 0 -> the 1st; ceil(0.9 x 6) = 6 -> the 5th.
        self.assertEqual(calibrate.conformal_band([0.3, -0.1, 0.2, 0.0, -0.4]), (-0.4, 0.3))

    def test_the_band_holds_zero_and_weighs_by_spread(self):
        # Ten rows measured 1 % to 10 % over their prediction: the plain band's low end is
        # clamped to 0; the weighted one divides each residual by its row's kernel spread.
        rows = [(1.0 + k / 100, 1.0, 0.5) for k in range(1, 11)]
        band = calibrate.residual_band(rows)
        self.assertEqual(band["residual_p10"], 0.0)
        self.assertEqual(band["residual_p90"], 0.1)  # ceil(0.9 x 11) = 10: the largest
        self.assertEqual(band["residual_per_spread_p90"], 0.2)
        # A row without a spread leaves the weighted band out.
        band = calibrate.residual_band(rows + [(0.9, 1.0, 0.0)])
        self.assertNotIn("residual_per_spread_p10", band)
        self.assertEqual(band["residual_p10"], -0.1)  # floor(0.1 x 12) = 1: the smallest


class Folds(unittest.TestCase):
    def test_thirty_rows_deal_ten_folds_of_three_by_their_hash(self):
        names = ["row %d" % i for i in range(30)]
        folds = calibrate.folds_of(names)
        self.assertEqual(len(folds), 10)
        self.assertTrue(all(len(f) == 3 for f in folds))
        self.assertEqual(frozenset().union(*folds), frozenset(names))
        order = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        self.assertEqual(folds[0], frozenset([order[0], order[10], order[20]]))
        # The deal depends on the names only, not on the order they come in.
        self.assertEqual(calibrate.folds_of(list(reversed(names))), folds)

    def test_fewer_rows_than_folds_hold_one_out_each(self):
        folds = calibrate.folds_of(["a", "b", "c", "d", "e"])
        self.assertEqual(sorted(len(f) for f in folds), [1] * 5)


class NelderMead(unittest.TestCase):
    def test_finds_a_quadratic_minimum_inside_the_bounds(self):
        def f(v):
            return (v[0] - 0.8) ** 2 + 100 * (v[1] - 0.03) ** 2

        # Started at the first bound (1.0), the first step goes down.
        best, loss = calibrate.restarted_nelder_mead(f, [1.0, 0.0], [0.1, 0.01],
                                                     calibrate.UPPER[:2])
        self.assertAlmostEqual(best[0], 0.8, delta=0.01)
        self.assertAlmostEqual(best[1], 0.03, delta=0.001)
        self.assertLess(loss, 1e-4)

    def test_padded_fills_the_unfitted_parameters_with_their_neutral_values(self):
        self.assertEqual(calibrate.padded([0.9]), [0.9, 0.0, 0.0, 1.0])


class Apply(unittest.TestCase):
    def test_writes_each_parameter_into_its_block_before_the_sources(self):
        platform = {"name": "p", "overlap": {"tp": 1}, "sources": {"x": "y"}}
        out = calibrate.apply(platform, [0.9, 0.05, 0.1, 0.95], {"residual_p10": -0.04})
        self.assertEqual(list(out), ["name", "overlap", "calibration", "sources"])
        self.assertEqual(out["overlap"], {"tp": 1, "compute_slowdown": 0.1})
        self.assertEqual(out["calibration"], {"sustained_compute": 0.9, "gpu_speed_spread": 0.05,
                                              "sustained_fp8_gemm": 0.95,
                                              "residual_p10": -0.04})
        self.assertEqual(platform["overlap"], {"tp": 1})  # the input is left alone


@unittest.skipUnless(os.environ.get("TRAINSIM"), "needs a trainsim binary in TRAINSIM")
class FittingHalfCopy(unittest.TestCase):
    def test_the_fit_prices_exactly_the_fitting_rows(self):
        reference = calibrate.REFERENCES["a100-sxm-hdr"]
        fit = calibrate.Fit(os.environ["TRAINSIM"],
                            os.path.join(ROOT, "platforms", "a100-sxm-hdr.json"), reference)
        self.addCleanup(fit.tmp.cleanup)
        listed = fit.validate(reference, None)
        fitting = sorted(r["name"] for r in listed if r.get("half") == "fit")
        self.assertEqual(len(fitting), 5)
        self.assertNotEqual(fit.references, reference)  # a copy, in a temporary folder
        priced = fit.rows(calibrate.padded([0.7]), half=None)
        self.assertEqual(sorted(name for _, _, _, name in priced), fitting)


def synthetic_runs(folder, trainsim, scenarios, slower, more_memory_mib=None):
    """Catalog scenarios as measured runs of a cluster `slower` times slower than predicted (the
    analytic engine, for speed), each allocating `more_memory_mib` more than predicted at its peak
    where given; the predicted step times."""
    steps = []
    for name in scenarios:
        with open(os.path.join(ROOT, "scenarios", name + ".json")) as f:
            scenario = json.load(f)
        out = subprocess.run([trainsim, "run", os.path.join(ROOT, "scenarios", name + ".json"),
                              "--engine", "analytic", "--format", "json"],
                             check=True, capture_output=True, text=True).stdout
        report = json.loads(out)
        steps.append(report["step_time_s"])
        scenario["engine"] = "analytic"
        scenario["published"] = [{"step_time_s": steps[-1] * slower, "source": "synthetic"}]
        if more_memory_mib is not None:
            peak = max(s["peak_allocated_bytes"] for s in report["stages"])
            scenario["published"].append({"max_allocated_gib": (peak / 2**20 + more_memory_mib)
                                          / 1024, "source": "synthetic peak"})
        with open(os.path.join(folder, os.path.basename(name) + ".json"), "w") as f:
            json.dump(scenario, f)
    return steps


@unittest.skipUnless(os.environ.get("TRAINSIM"), "needs a trainsim binary in TRAINSIM")
class MeasuredRunsFit(unittest.TestCase):
    def test_a_cluster_ten_percent_slower_is_fitted_to_its_runs(self):
        trainsim = os.environ["TRAINSIM"]
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        runs = os.path.join(tmp.name, "runs")
        os.mkdir(runs)
        synthetic_runs(runs, trainsim, ["teaching/memory", "teaching/schedules"], 1.1, 250.0)
        out = os.path.join(tmp.name, "my-cluster.json")
        script = os.path.join(ROOT, "results", "calibrate.py")
        build = os.path.dirname(trainsim)
        subprocess.run([sys.executable, script, "--runs", runs, "--out", out, "--build", build],
                       check=True, capture_output=True, text=True)
        with open(os.path.join(ROOT, "platforms", "h100-sxm-ndr.json")) as f:
            base = json.load(f)
        with open(out) as f:
            fitted = json.load(f)
        self.assertEqual(fitted["name"], "my-cluster")
        # Two rows fit one parameter: compute-bound steps take 1 / sustained_compute, so the
        # platform's share over 1.1, a little less where communication does not scale with it.
        sustained = fitted["calibration"]["sustained_compute"]
        self.assertLess(sustained, base["calibration"]["sustained_compute"] / 1.1 + 0.002)
        self.assertGreater(sustained, base["calibration"]["sustained_compute"] / 1.1 - 0.03)
        # The parameters not fitted keep the platform's values; the database is found.
        self.assertEqual(fitted["calibration"]["gpu_speed_spread"],
                         base["calibration"]["gpu_speed_spread"])
        self.assertEqual(fitted["overlap"], base["overlap"])
        # Both runs allocated 250 MiB more than predicted at their peak: the overhead is 250 MiB
        # more than the platform's.
        self.assertAlmostEqual(fitted["memory"]["allocated_overhead_MiB"],
                               base["memory"]["allocated_overhead_MiB"] + 250.0, places=6)
        self.assertIn("2 measured peaks", fitted["sources"]["memory.allocated_overhead_MiB"])
        self.assertTrue(os.path.isfile(os.path.join(tmp.name, fitted["kernel_database"])))
        # On the fitted platform the runs are predicted within 1.5 %.
        listed = subprocess.run([trainsim, "validate", runs, "--platform", out, "--format",
                                 "json"], check=True, capture_output=True, text=True).stdout
        steps, peaks = json.loads(listed)["validation"]
        for row in steps["rows"]:
            self.assertLess(abs(row["error"]), 0.015, row)
        for row in peaks["rows"]:  # and the peaks within what rounding to 0.1 MiB leaves
            self.assertLess(abs(row["measured_bytes"] - row["predicted_bytes"]), 0.06 * 2**20)

    def test_a_fit_to_runs_goes_to_a_file_of_its_own(self):
        script = os.path.join(ROOT, "results", "calibrate.py")
        for extra, words in (([], "--runs needs --out FILE"),
                             (["--out", "x.json", "--write"], "--write stores a fit"),
                             (["--out", "x.json", "--platform", "h300"],
                              "--platform: no such file or catalog platform: h300")):
            r = subprocess.run([sys.executable, script, "--runs", "r/", *extra],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertEqual(r.returncode, 2, r.stderr)  # bad input, as trainsim's own
            self.assertIn(words, r.stderr)

    def test_a_run_trainsim_refuses_is_named_with_trainsims_message(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        with open(os.path.join(tmp.name, "bad.json"), "w") as f:
            json.dump({"model": "llama3.1-8b", "platform": "h100-sxm-ndr",
                       "plan": {"tp": 0, "seq_len": 4096},
                       "published": [{"step_time_s": 1.0, "source": "a test"}]}, f)
        script = os.path.join(ROOT, "results", "calibrate.py")
        r = subprocess.run([sys.executable, script, "--runs", tmp.name, "--out",
                            os.path.join(tmp.name, "out.json"), "--build",
                            os.path.dirname(os.environ["TRAINSIM"])],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("trainsim validate refused the rows: trainsim: error: ", r.stderr)
        self.assertIn("bad.json: $.plan.tp: must be an integer >= 1, got 0", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(tmp.name, "out.json")))


if __name__ == "__main__":
    unittest.main()
