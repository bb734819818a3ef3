"""check_json / check_csv / run_sqlite3 over files made here, and check_accessibility_tree over a small tree."""

import json
import sqlite3

import pytest

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.a11y_tree import check_accessibility_tree
from rla_envs.desktop.osworld.metrics.records import check_csv, check_json, run_sqlite3


def test_check_json_expect_and_unexpect(tmp_path):
    path = tmp_path / "xulstore.json"
    path.write_text(json.dumps({"messenger": {"folderTree": {"mode": "smart,all"}}, "n": 3}))
    mode = ["messenger", "folderTree", "mode"]
    assert check_json(str(path), {"expect": [{"key": mode, "method": "re", "ref": r"\bsmart\b"}]}) == 1.0
    assert check_json(str(path), {"expect": [{"key": mode, "method": "re", "ref": r"\bfavorite\b"}]}) == 0.0
    assert check_json(str(path), {"unexpect": [{"key": ["absent"], "method": "eq", "ref": 1}]}) == 1.0
    assert check_json(str(path), {"expect": [{"key": ["n"], "method": "re", "ref": "3"}]}) == 0.0  # a number
    assert check_json(str(tmp_path / "none.json"), {"expect": []}) == 0.0
    with pytest.raises(EvaluationError, match="method 'like' is not supported"):
        check_json(str(path), {"expect": [{"key": ["n"], "method": "like", "ref": 3}]})


def test_check_json_reads_yaml(tmp_path):
    path = tmp_path / "_config.yml"
    path.write_text("author:\n  email: Test@gmail.com\n")
    rules = {"expect": [{"key": ["author", "email"], "method": "eq", "ref": "Test@gmail.com"}]}
    assert check_json(str(path), rules, is_yaml=True) == 1.0
    assert check_json(str(path), rules) == 0.0  # not JSON


def test_check_csv(tmp_path):
    path = tmp_path / "accounts.csv"
    path.write_text("url,user\nimap://a,ada\n")
    assert check_csv(str(path), {"expect": [{"user": "ada"}]}) == 1.0
    assert check_csv(str(path), {"unexpect": [{"url": "imap://a", "user": "ada"}]}) == 0.0
    assert check_csv(None, {}) == 0.0


def test_run_sqlite3(tmp_path):
    database = tmp_path / "db.sqlite"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.execute("INSERT INTO t VALUES (1)")
    connection.commit()
    connection.close()
    assert run_sqlite3(str(database), {"sql": "SELECT COUNT(*) = 1 FROM t"}) == 1.0
    assert run_sqlite3(str(database), {"sql": "SELECT COUNT(*) = 2 FROM t"}) == 0.0
    assert run_sqlite3(str(database), {"sql": "SELECT * FROM missing"}) == 0.0
    assert run_sqlite3(str(tmp_path / "none.sqlite"), {"sql": "SELECT 1"}) == 0.0
    with pytest.raises(sqlite3.OperationalError):  # opened read-only: a query cannot change the agent's file
        sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True).execute("DELETE FROM t")


TREE = ('<desktop-frame xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes">'
        '<application name="Thunderbird"><page-tab attr:id="t1" name="About Profiles">About Profiles</page-tab>'
        '</application></desktop-frame>')


def test_check_accessibility_tree():
    assert check_accessibility_tree(TREE, [{"selectors": ['page-tab[attr|id="t1"]']}]) == 1.0
    assert check_accessibility_tree(TREE, [{"xpath": "//page-tab[@name='Inbox']"}]) == 0.0
    assert check_accessibility_tree(TREE, [{"xpath": "//page-tab", "text": "About Profiles"}]) == 1.0
    # "About Profile" vs "About Profiles": LCS 13, 2 * 13 / (13 + 14)
    assert check_accessibility_tree(TREE, [{"xpath": "//page-tab", "text": "About Profile", "exact": False}]) \
        == pytest.approx(26 / 27)
    assert check_accessibility_tree("<not xml", [{"xpath": "//a"}]) == 0.0
    with pytest.raises(EvaluationError, match="needs 'xpath' or 'selectors'"):
        check_accessibility_tree(TREE, [{"text": "x"}])
