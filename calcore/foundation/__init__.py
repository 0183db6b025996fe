"""calcore's foundations: what every layer above uses, on plain arrays and numbers.

Nothing here imports another calcore package. The modules:

* :mod:`~calcore.foundation.errors` -- :class:`~calcore.foundation.errors.CalcoreError`,
  :class:`~calcore.foundation.errors.CalcoreWarning` and how messages quote what they name;
* :mod:`~calcore.foundation.validation` -- checks of probabilities, logits, labels and
  row weights;
* :mod:`~calcore.foundation.deprecation` -- renamed keywords, attributes and module paths
  that keep working one release, with a warning;
* :mod:`~calcore.foundation.softmax` -- row-wise (log-)softmax;
* :mod:`~calcore.foundation.limits` -- the limits of count options and the decoded-size
  budget of files, each defined once with its check;
* :mod:`~calcore.foundation.threads` -- how many threads (one worker policy) and the
  split of numpy work between them;
* :mod:`~calcore.foundation.tuning` -- every size or switch chosen by measuring speed or
  memory, each with the measurement that chose it;
* :mod:`~calcore.foundation.binning` -- binning schemes (equal width, equal mass, ...);
* :mod:`~calcore.foundation.kernel_density` -- the kernel density estimators of KDE-ECE;
* :mod:`~calcore.foundation.keyed_random` -- uniforms and Poisson(1) bootstrap weights
  keyed by (seed, row position, replicate), the same however rows are batched;
* :mod:`~calcore.foundation.exact_ranks` -- exact order statistics of grouped scores in
  a stream read several times;
* :mod:`~calcore.foundation.version` -- this calcore's version and where it is installed
  (what Spark's workers check).
"""
