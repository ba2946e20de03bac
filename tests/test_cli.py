"""The ``nsopt`` command line (nsopt/cli.py): demo, solve, errors, Ctrl-C, ``python -m nsopt``."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest

import nsopt
from nsopt.cli import main

CERTIFICATE_LINES = ("fun", "lower bound", "gap", "relative gap", "status", "iterations", "time",
                     "train accuracy", "the optimum lies in")


def write_svmlight(path, X, y):
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(xi) if v != 0)
            f.write(f"{yi:g} {feats}\n")
    return path


def two_class_data(m=200, d=10, seed=0):
    """Labels 1 and 2 (not -1/+1), mostly linearly separable."""
    w = np.random.default_rng(12345).normal(size=d)  # one hidden model for every sample
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.5), 3)
    y = np.where(X @ w + 0.2 * rng.normal(size=m) > 0, 2, 1)
    return X, y


@pytest.fixture
def tiny(tmp_path):
    X, y = two_class_data()
    return write_svmlight(tmp_path / "tiny.svm", X, y), X, y


def certificate_values(text):
    """The first word after each name in the certificate block, by name."""
    out = {}
    for line in text.splitlines():
        for key in ("fun", "lower bound", "gap", "relative gap", "iterations", "status",
                    "train accuracy", "test accuracy"):
            if line.startswith(f"  {key} "):
                out[key] = line[len(key) + 2:].split()[0]
    return out


def test_demo_prints_certificate(capsys):
    assert main(["demo", "--n-samples", "500", "--no-live"]) == 0
    text = capsys.readouterr().out
    for key in CERTIFICATE_LINES:
        assert key in text, f"certificate line {key!r} missing from:\n{text}"
    cert = certificate_values(text)
    assert cert["status"] == "converged"
    fun, lower = float(cert["fun"]), float(cert["lower bound"])
    assert lower <= fun and fun - lower <= 1e-3 * fun * (1 + 1e-6)
    assert 50.0 < float(cert["train accuracy"].rstrip("%")) <= 100.0
    # plain progress lines: a header and the first iteration
    assert "lower bound" in text.splitlines()[1] and text.splitlines()[2].split()[0] == "0"


def test_demo_iteration_limit_still_certifies(capsys):
    assert main(["demo", "--n-samples", "300", "--max-iter", "3", "--no-live"]) == 0
    cert = certificate_values(capsys.readouterr().out)
    assert cert["status"] == "max_iter" and cert["iterations"] == "3"
    assert float(cert["lower bound"]) <= float(cert["fun"])


def test_solve_two_labels_out_npz(tiny, tmp_path, capsys):
    path, X, y = tiny
    out = tmp_path / "model.npz"
    code = main(["solve", str(path), "--lam", "1e-2", "--rtol", "1e-4", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "label 2 -> +1" in text and "1 -> -1" in text
    with np.load(out) as z:
        assert {"w", "fun", "lower_bound", "gap", "status", "nit", "options", "labels"} <= set(z.files)
        w, fun, lower, gap = z["w"], float(z["fun"]), float(z["lower_bound"]), float(z["gap"])
        assert str(z["status"]) == "converged" and int(z["nit"]) > 0
        options = json.loads(str(z["options"]))
        assert z["labels"].tolist() == [1.0, 2.0]
    assert options["loss"] == "hinge" and options["reg"] == "l2" and options["lam"] == 1e-2
    # no --method: the problem's default (nsopt.minimize.default_method), named in the notes
    assert options["rtol"] == 1e-4 and options["method"] in {"dcd", "ls-bmrm"}
    assert f"{options['method']}: hinge" in text
    assert w.shape == (X.shape[1],)
    assert lower <= fun and gap == pytest.approx(fun - lower) and gap <= 1e-4 * fun
    # fun really is J at the saved w, with the labels mapped 2 -> +1, 1 -> -1
    yy = np.where(y == 2, 1.0, -1.0)
    J = 0.5e-2 * w @ w + np.mean(np.maximum(0.0, 1.0 - yy * (X @ w)))
    assert fun == pytest.approx(J, rel=1e-9)
    assert f"{fun:.10g}" in text


def test_solve_test_accuracy(tiny, tmp_path, capsys):
    path, X, y = tiny
    Xt, yt = two_class_data(m=100, seed=1)
    Xt[:, -1] = 0.0  # the test file then has fewer columns than the training file
    test = write_svmlight(tmp_path / "test.svm", Xt, yt)
    out = tmp_path / "m.npz"
    assert main(["solve", str(path), "--lam", "1e-2", "--test", str(test), "--out", str(out),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    with np.load(out) as z:
        w = z["w"]
    expected = np.mean(np.where(Xt @ w >= 0, 2, 1) == yt)
    line = next(l for l in text.splitlines() if l.startswith("  test accuracy"))
    assert float(line.split()[2].rstrip("%")) == pytest.approx(100 * expected, abs=0.006)
    assert float(line.split()[2].rstrip("%")) > 80.0  # same hidden model as the training data
    assert "time (s)" not in text and "label 2 -> +1" not in text  # --quiet: certificate only


@pytest.mark.parametrize("reg", ["l1", "elastic-net", "lp"])
@pytest.mark.parametrize("loss", ["squared-hinge", "logistic"])
def test_solve_losses_and_regularizers(tiny, capsys, loss, reg):
    path, X, y = tiny
    assert main(["solve", str(path), "--loss", loss, "--reg", reg, "--lam", "0.1", "--quiet"]) == 0
    cert = certificate_values(capsys.readouterr().out)
    assert cert["status"] == "converged"
    assert float(cert["relative gap"]) <= 1e-3


@pytest.mark.parametrize("method", sorted(nsopt.solvers.SOLVERS))
def test_solve_every_registered_method(tiny, capsys, method):
    """--method accepts every name of nsopt.solvers.SOLVERS, and each certifies its answer."""
    box = ["--bounds", "-100", "100"] if method == "level-bundle" else []  # it needs a box
    if method == "newton-cd":  # L1 with a logistic or squared hinge loss only
        box = ["--loss", "logistic", "--reg", "l1"]
    if method == "newton-cg":  # L2 with a logistic or squared hinge loss only
        box = ["--loss", "logistic", "--reg", "l2"]
    assert main(["solve", str(tiny[0]), "--lam", "1e-2", "--method", method, "--quiet"] + box) == 0
    cert = certificate_values(capsys.readouterr().out)
    assert cert["status"] == "converged"
    assert float(cert["lower bound"]) <= float(cert["fun"])
    assert float(cert["relative gap"]) <= 1e-3


def test_level_bundle_without_bounds_says_so(tiny, capsys):
    code, err = error_of(["solve", str(tiny[0]), "--method", "level-bundle", "--quiet"], capsys)
    assert code == 2 and "bounds" in err
    code, err = error_of(["solve", str(tiny[0]), "--bounds", "1", "-1", "--method",
                          "level-bundle", "--quiet"], capsys)
    assert code == 2 and "lb > ub" in err
    code, err = error_of(["solve", str(tiny[0]), "--bounds", "-1", "1", "--quiet"], capsys)
    assert code == 2 and "bounds" in err  # bmrm takes no box


def test_solve_n_features_pads(tiny, tmp_path, capsys):
    path, X, _ = tiny
    out = tmp_path / "m.npz"
    assert main(["solve", str(path), "--lam", "0.1", "--n-features", "25", "--out", str(out),
                 "--quiet"]) == 0
    with np.load(out) as z:
        assert z["w"].shape == (25,)
        assert np.all(z["w"][X.shape[1]:] == 0.0)  # features never seen: weight 0 under L2


def error_of(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


def test_unknown_loss(tiny, capsys):
    code, err = error_of(["solve", str(tiny[0]), "--loss", "absolute"], capsys)
    assert code == 2 and "--loss" in err and "invalid choice: 'absolute'" in err


def test_missing_file(tmp_path, capsys):
    missing = tmp_path / "nope.svm"
    code, err = error_of(["solve", str(missing)], capsys)
    assert code == 2 and "no such file" in err and "nope.svm" in err


def test_unknown_dataset_name(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NSOPT_DATA", str(tmp_path))
    code, err = error_of(["solve", "no-such-dataset"], capsys)
    assert code == 2 and "neither a file nor a known data set" in err


def test_three_classes_with_hinge(tmp_path, capsys):
    X, _ = two_class_data(m=30)
    path = write_svmlight(tmp_path / "three.svm", X, np.arange(30) % 3 + 1)
    code, err = error_of(["solve", str(path), "--loss", "hinge"], capsys)
    assert code == 2 and "3 classes (1, 2, 3)" in err and "binary" in err


@pytest.mark.parametrize("argv, fragment", [
    (["--lam", "0"], "--lam: must be a finite number > 0"),
    (["--lam", "abc"], "--lam: expected a number"),
    (["--reg", "lp", "--p", "1"], "Lp needs 1 < p < inf"),
    (["--out", "/no/such/dir/m.npz"], "does not exist"),
    (["--method", "nope"], "--method: invalid choice"),
])
def test_bad_options(tiny, capsys, argv, fragment):
    code, err = error_of(["solve", str(tiny[0]), *argv], capsys)
    assert code == 2 and fragment in err


def test_method_that_cannot_solve_the_problem(tiny, capsys, monkeypatch):
    class Picky(nsopt.solvers.BMRM):
        name = "picky"

        @classmethod
        def unsupported_reason(cls, problem):
            return "picky solves nothing"

    monkeypatch.setitem(nsopt.solvers.SOLVERS, "picky", Picky)
    code, err = error_of(["solve", str(tiny[0]), "--method", "picky"], capsys)
    assert code == 2 and "--method picky: picky solves nothing" in err


def test_malformed_file(tmp_path, capsys):
    path = tmp_path / "bad.svm"
    path.write_text("1 1:0.5\n2 x:1\n")
    code, err = error_of(["solve", str(path)], capsys)
    assert code == 2 and "line 2" in err


def test_test_labels_not_in_training(tiny, tmp_path, capsys):
    X, _ = two_class_data(m=10)
    test = write_svmlight(tmp_path / "t.svm", X, np.full(10, 7))
    code, err = error_of(["solve", str(tiny[0]), "--test", str(test)], capsys)
    assert code == 2 and "labels [7.0] not in the training labels" in err


def test_ctrl_c_returns_best_so_far(tiny, capsys, monkeypatch):
    """KeyboardInterrupt in the 6th oracle call: certificate printed, status interrupted, 130."""
    calls = {"n": 0}
    original = nsopt.losses.Hinge._value_and_subgradient

    def interrupting(self, w):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return original(self, w)

    monkeypatch.setattr(nsopt.losses.Hinge, "_value_and_subgradient", interrupting)
    # ls-bmrm named: one oracle call an iteration (the default here is dcd-probe since its
    # conditioning is above DCD_MAX_CONDITIONING)
    code = main(["solve", str(tiny[0]), "--lam", "1e-4", "--no-live", "--method", "ls-bmrm"])
    cert = certificate_values(capsys.readouterr().out)
    assert code == 130
    assert cert["status"] == "interrupted" and int(cert["iterations"]) == 4
    assert float(cert["lower bound"]) <= float(cert["fun"]) <= 1.0


def test_ctrl_c_while_drawing_the_table(tiny, capsys, monkeypatch):
    """SIGINT while the progress display draws iteration 3: the solver stops after its next
    step with status interrupted (no traceback from inside the display code)."""
    import signal

    from nsopt import cli

    before = signal.getsignal(signal.SIGINT)  # default, or SIG_IGN under a background shell
    original = cli._PlainProgress.update

    def update(self, row, final=False):
        if row["iteration"] == 3 and not final:
            signal.raise_signal(signal.SIGINT)
        return original(self, row, final)

    monkeypatch.setattr(cli._PlainProgress, "update", update)
    code = main(["solve", str(tiny[0]), "--lam", "1e-4", "--no-live"])
    text = capsys.readouterr().out
    cert = certificate_values(text)
    assert code == 130
    assert cert["status"] == "interrupted" and int(cert["iterations"]) == 4
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is restored


def test_ctrl_c_before_first_iteration(tiny, capsys, monkeypatch):
    def interrupting(self, w):
        raise KeyboardInterrupt

    monkeypatch.setattr(nsopt.losses.Hinge, "_value_and_subgradient", interrupting)
    code = main(["solve", str(tiny[0])])
    captured = capsys.readouterr()
    assert code == 130 and "interrupted" in captured.err and "Traceback" not in captured.err


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_live_table_on_a_terminal(tiny, monkeypatch):
    for var in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")  # rich draws nothing live on a "dumb" terminal
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", term)
    assert main(["solve", str(tiny[0]), "--lam", "1e-2"]) == 0
    text = term.getvalue()
    assert "\x1b[" in text  # drawn with cursor control, not plain lines
    assert "planes" in text and "certificate" in text and "converged" in text


def test_python_dash_m_help():
    proc = subprocess.run([sys.executable, "-m", "nsopt", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "demo" in proc.stdout and "solve" in proc.stdout


def test_no_command_is_a_usage_error(capsys):
    code, err = error_of([], capsys)
    assert code == 2 and "COMMAND" in err


@pytest.mark.slow
def test_solve_a9a(capsys):
    data_dir = nsopt.io.find_data_dir()
    if data_dir is None or not any((data_dir / f"a9a{s}").is_file() for s in ("", ".xz", ".gz", ".bz2")):
        pytest.skip("a9a not found (set NSOPT_DATA or put the data in ../shared/data)")
    assert main(["solve", "a9a", "--lam", "1e-4", "--test", "a9a.t", "--no-live"]) == 0
    text = capsys.readouterr().out
    cert = certificate_values(text)
    fun, lower = float(cert["fun"]), float(cert["lower bound"])
    assert cert["status"] == "converged" and fun - lower <= 1e-3 * fun
    assert "32561 examples x 123 features" in text
    # J* for hinge + L2, lam = 1e-4, no bias, lies in [0.3517617621, 0.3517618005]: the lower end
    # from nsopt at rtol 1e-6, the upper end J(w) at Clarabel's solution (cvxpy, tolerances 1e-10)
    assert lower <= 0.3517618005 and fun >= 0.3517617621
    assert 84.0 < float(cert["train accuracy"].rstrip("%")) < 86.0
    assert 84.0 < float(cert["test accuracy"].rstrip("%")) < 86.0


@pytest.mark.parametrize("spelling", ["squared-hinge", "squared_hinge", "Squared_Hinge"])
def test_loss_names_come_from_the_registry(tiny, capsys, spelling):
    """--loss offers the binary losses of nsopt.losses.LOSSES; the old spelling and the
    underscore one (nsopt.testing's) name the same class."""
    from nsopt.cli import _binary_losses

    assert _binary_losses() == sorted(n for n, c in nsopt.losses.LOSSES.items()
                                      if getattr(c, "binary", False))
    assert {"hinge", "squared-hinge", "logistic"} <= set(_binary_losses())
    assert main(["solve", str(tiny[0]), "--loss", spelling, "--lam", "0.1", "--quiet"]) == 0
    assert certificate_values(capsys.readouterr().out)["status"] == "converged"


def test_counts_are_singular_for_one():
    from nsopt.cli import _count

    assert (_count(1, "shard"), _count(3, "worker"), _count(0, "shard")) == (
        "1 shard", "3 workers", "0 shards")
