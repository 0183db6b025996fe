"""Keys that `calcore metrics --json` and `CalibrationReport.as_dict()` must contain."""

REQUIRED_KEYS = frozenset(
    {
        "n",
        "n_classes",
        "accuracy",
        "nll",
        "brier",
        "conf_ece",
        "conf_mce",
        "top_label_ece",
        "top_label_mce",
        "classwise_ece",
        "kde_ece",
        "kde_ece_classwise",
        "bins",
        "binning",
    }
)


def interval_keys(report):
    """The metrics of ``report`` that get a bootstrap interval: every computed one but the
    p-values (``MetricSpec.p_value``); on predictions of more than two classes the binary
    measures are not computed."""
    import calcore

    return {
        k for k, v in report.metrics.items() if v is not None and not calcore.METRICS[k].p_value
    }


def multiclass_keys():
    """The metrics of any number of classes (not the measures of binary models)."""
    import calcore

    return [k for k, spec in calcore.METRICS.items() if not spec.binary_only]


def assert_same_metrics(got, want, *, rel, abs):
    """Every metric of two reports equal within the tolerance; a metric None in either must
    be None in both (the binary measures of multiclass rows) or one of those a stream
    leaves out because they need the rows in memory (``IN_MEMORY_METRICS``, with a note)."""
    import pytest

    import calcore
    from calcore.metrics.registry import IN_MEMORY_METRICS

    for k in calcore.METRICS:
        g, w = got.metrics[k], want.metrics[k]
        if g is None or w is None:
            assert (g is None and w is None) or k in IN_MEMORY_METRICS, k
            continue
        assert g == pytest.approx(w, rel=rel, abs=abs), k
