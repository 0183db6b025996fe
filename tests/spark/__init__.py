"""Spark tests: a package, so that its conftest is ``spark.conftest`` and never shadows the
module called ``conftest`` that tests elsewhere import constants from."""
