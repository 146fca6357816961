"""Speed metrics: which value of a benchmark row each grades, and how it is written."""

from autograder import metrics, registry
from autograder import problem as problem_mod
from autograder.problem import LinearScale


def test_each_metric_reads_its_own_value_of_a_row():
    row = {"copy_fraction": 0.91, "ratio": 1.25, "roofline_fraction": 0.88}
    assert metrics.COPY_FRACTION.of(row) == 0.91
    assert metrics.LIBRARY_RATIO.of(row) == 1.25
    assert metrics.ROOFLINE_FRACTION.of(row) == 0.88
    assert metrics.LIBRARY_RATIO.of({}) == 0.0


def test_fractions_are_written_as_percentages_and_ratios_with_the_library():
    assert metrics.COPY_FRACTION.shown(0.956) == "96% of copy bandwidth"
    assert metrics.COPY_FRACTION.shown(0.956, digits=1) == "95.6% of copy bandwidth"
    assert metrics.LIBRARY_RATIO.shown(1.314, "SDPA") == "1.31x SDPA"
    assert metrics.ROOFLINE_FRACTION.level(0.7) == "70%"
    assert metrics.LIBRARY_RATIO.level(0.7) == "0.70x"
    assert metrics.named("roofline_fraction") is metrics.ROOFLINE_FRACTION


def test_a_scale_describes_its_thresholds_in_its_metric():
    assert LinearScale(metrics.COPY_FRACTION, 0.3, 0.75).describe() == "0 points at 30% of copy bandwidth, full at 75%"
    assert LinearScale(metrics.LIBRARY_RATIO, 0.2, 0.7).describe() == "0 points at 0.20x the library, full at 0.70x the library"


def test_every_timed_problem_grades_on_a_known_metric_and_every_problem_says_its_kind():
    for p in registry.all_problems():
        assert p.kind in problem_mod.KINDS
        if problem_mod.has_speed_grade(p):
            assert p.speed_scale.metric in metrics.METRICS.values()
