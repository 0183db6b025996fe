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
