"""Where load_dataset and find_data_dir look for data: NSOPT_DATA, then the user data folder
(~/.nsopt/data, or $XDG_DATA_HOME/nsopt), then ../shared/data from the working directory;
never relative to the installed package."""
from pathlib import Path

import numpy as np
import pytest

import nsopt
from nsopt import io as nio


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An isolated world: a home, an XDG folder (unset), a working directory with a sibling
    shared/data, an NSOPT_DATA folder (unset); each created on demand by the test."""
    home = tmp_path / "home"
    home.mkdir()
    cwd = tmp_path / "work" / "repo"
    cwd.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))  # Path.home() on Windows
    monkeypatch.delenv("NSOPT_DATA", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.chdir(cwd)
    return {
        "env": tmp_path / "env",
        "user": home / ".nsopt" / "data",
        "xdg": tmp_path / "xdg",
        "shared": tmp_path / "work" / "shared" / "data",
    }


def _put(folder: Path, name: str, n_rows: int) -> None:
    """A small svmlight file with ``n_rows`` rows, so each folder's copy is recognisable."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{1 if i % 2 else -1} 1:{i + 1} 3:0.5\n" for i in range(n_rows))
    (folder / name).write_text(rows)


def test_order_of_precedence(places, monkeypatch):
    _put(places["shared"], "toy", 3)
    assert nio.find_data_dir() == places["shared"].resolve()
    assert nio.load_dataset("toy")[0].shape[0] == 3

    _put(places["user"], "toy", 4)  # the user folder beats ../shared/data
    assert nio.find_data_dir() == places["user"].resolve()
    assert nio.load_dataset("toy")[0].shape[0] == 4

    _put(places["env"], "toy", 5)  # NSOPT_DATA beats both
    monkeypatch.setenv("NSOPT_DATA", str(places["env"]))
    assert nio.find_data_dir() == places["env"].resolve()
    assert nio.load_dataset("toy")[0].shape[0] == 5


def test_a_file_missing_from_the_first_folder_is_found_in_a_later_one(places, monkeypatch):
    _put(places["env"], "other", 2)
    _put(places["shared"], "toy", 3)
    monkeypatch.setenv("NSOPT_DATA", str(places["env"]))
    assert nio.find_data_dir() == places["env"].resolve()
    X, y = nio.load_dataset("toy")
    assert X.shape[0] == 3 and set(np.unique(y)) == {-1.0, 1.0}


def test_xdg_data_home_replaces_the_dot_folder(places, monkeypatch):
    _put(places["user"], "toy", 4)
    _put(places["xdg"] / "nsopt", "toy", 6)
    monkeypatch.setenv("XDG_DATA_HOME", str(places["xdg"]))
    assert nio.find_data_dir() == (places["xdg"] / "nsopt").resolve()
    assert nio.load_dataset("toy")[0].shape[0] == 6
    dirs = [d for _, d in nio._candidate_data_dirs()]
    assert places["user"] not in dirs


def test_nothing_found_names_every_place_and_says_where_to_put_it(places, monkeypatch):
    monkeypatch.setenv("NSOPT_DATA", str(places["env"]))
    with pytest.raises(FileNotFoundError) as e:
        nio.load_dataset("a9a")
    msg = str(e.value)
    for key in ("env", "user", "shared"):
        assert str(places[key]) in msg.replace(str(Path.cwd() / ".." / "shared" / "data"),
                                              str(places["shared"]))
    assert "$NSOPT_DATA" in msg and "does not exist" in msg
    assert f"in {places['user']}" in msg and "set NSOPT_DATA" in msg
    assert nio.find_data_dir() is None


def test_no_lookup_relative_to_the_package(places):
    package = Path(nsopt.__file__).resolve().parent
    for what, directory in nio._candidate_data_dirs():
        assert "repository" not in what
        assert not str(directory.resolve()).startswith(str(package.parent)), (what, directory)
    # a data folder next to the package (as ../shared/data of a checkout, or inside
    # site-packages after pip install) is not found from an unrelated working directory
    assert nio.find_data_dir() is None


def test_an_explicit_data_dir_is_the_only_place(places):
    _put(places["shared"], "toy", 3)
    with pytest.raises(FileNotFoundError) as e:
        nio.load_dataset("toy", data_dir=places["env"])
    assert str(places["env"]) in str(e.value) and str(places["user"]) not in str(e.value)


def test_the_cli_finds_a_data_set_in_the_user_folder(places, capsys):
    from nsopt import cli

    rng = np.random.default_rng(0)
    places["user"].mkdir(parents=True)
    lines = []
    for i in range(40):
        x = rng.standard_normal(3)
        lines.append(f"{1 if x[0] > 0 else -1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    (places["user"] / "tiny").write_text("\n".join(lines) + "\n")
    code = cli.main(["solve", "tiny", "--lam", "0.1"])
    out = capsys.readouterr()
    assert code in (0, None), out.err
    assert "tiny" in out.out + out.err
