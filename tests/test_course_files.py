"""A course's folders of other students' work are hidden from the learner's worker wherever grading
is started: the folder beside the package and the working folder nbgrader or the class command runs
in (its exchange of submitted notebooks included)."""

from __future__ import annotations

import os

from autograder import learner_code, sandbox


def test_every_students_folder_of_a_course_is_hidden(tmp_path):
    for name in ("exchange", "submitted", "autograded", "feedback", "source", "solutions"):
        (tmp_path / name).mkdir()
    (tmp_path / "gradebook.db").write_bytes(b"")
    (tmp_path / "exercises").mkdir()
    hidden = learner_code.course_files(str(tmp_path))
    assert sorted(os.path.basename(p) for p in hidden) == ["autograded", "exchange", "feedback", "gradebook.db", "solutions", "source", "submitted"]


def test_no_course_folder_hides_nothing(tmp_path):
    assert learner_code.course_files(None) == []
    assert learner_code.course_files(str(tmp_path)) == []


def test_the_judge_learns_the_folder_grading_was_started_in(tmp_path, monkeypatch):
    monkeypatch.delenv(learner_code.COURSE_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    assert sandbox._judge_env()[learner_code.COURSE_VARIABLE] == str(tmp_path)


def test_the_repository_beside_the_package_is_a_course_folder():
    package = os.path.dirname(learner_code.__file__)
    assert os.path.join(os.path.dirname(package), "solutions") in learner_code.hidden_files()


def test_folders_the_instructor_names_are_hidden(tmp_path, monkeypatch):
    exchange = tmp_path / "srv-exchange"
    exchange.mkdir()
    monkeypatch.setenv(learner_code.HIDE_VARIABLE, os.pathsep.join([str(exchange), str(tmp_path / "absent")]))
    assert learner_code.named_hidden() == [str(exchange)]
