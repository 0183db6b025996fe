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
