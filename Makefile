# calibration-lens developer entry points.
#   make run    serve the dashboard on http://127.0.0.1:8501 (data directory: DATA_DIR=data)
#   make test   the whole suite, browser and Spark tests included (installs Debian chromium
#               and a Java 17 runtime if missing)
#   make bench  every benchmarks/bench_*.py
#   make lint   ruff check
# Extra pytest arguments: make test PYTEST_ARGS="-k app -x"

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium
HOST ?= 127.0.0.1
PORT ?= 8501
PYTEST_ARGS ?=

.PHONY: help install run test bench lint chromium java clean replicate

help:
	@echo "targets: run test bench lint install chromium java clean"

# The venv itself; only created when missing.
$(PY):
	$(PYTHON) -m venv $(VENV)

# Pinned dependencies + the package in editable mode. Re-runs only when the pins or the
# package metadata change, so a second `make test` skips straight to pytest.
$(STAMP): requirements-dev.txt pyproject.toml | $(PY)
	$(PY) -m pip install --disable-pip-version-check --quiet -r requirements-dev.txt
	$(PY) -m pip install --disable-pip-version-check --quiet --no-deps -e .
	touch $@

install: $(STAMP)

# Debian's Chromium for the Playwright tests (never `playwright install`: it downloads
# browsers and fails on these machines). --no-install-recommends keeps apt from pulling in
# and upgrading systemd, udev, avahi and friends.
chromium:
	@if [ -x $(CHROMIUM) ]; then \
	  echo "chromium: $$($(CHROMIUM) --version 2>/dev/null || echo present)"; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  echo "chromium: installing Debian chromium + chromium-driver"; \
	  $$SUDO apt-get update -q; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    chromium chromium-driver; \
	  test -x $(CHROMIUM); \
	fi

# A Java runtime for pyspark (tests/spark, calcore.spark): Spark 4 runs on Java 17 or 21.
# Kept when JAVA_HOME or PATH already has a java of 17 or later; else Debian's
# openjdk-17-jre-headless, --no-install-recommends as for chromium. Slim Debian images lack
# /usr/share/man/man1, where the package's postinst links java.1.gz (and fails without it).
java:
	@java_bin=""; \
	if [ -n "$${JAVA_HOME:-}" ] && [ -x "$$JAVA_HOME/bin/java" ]; then java_bin="$$JAVA_HOME/bin/java"; \
	elif command -v java >/dev/null 2>&1; then java_bin="$$(command -v java)"; fi; \
	major=0; \
	if [ -n "$$java_bin" ]; then \
	  major=$$("$$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1); \
	fi; \
	if [ "$${major:-0}" -ge 17 ] 2>/dev/null; then \
	  echo "java: $$java_bin (Java $$major)"; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  echo "java: installing Debian openjdk-17-jre-headless (found: $${java_bin:-none})"; \
	  $$SUDO mkdir -p /usr/share/man/man1; \
	  $$SUDO apt-get update -q; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    openjdk-17-jre-headless; \
	  test -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java || command -v java; \
	fi

# The server's data directory, with the 10M-row demo dataset written on first run, and
# the workspace where "Keep on the server" stores uploads (7 days, 5 GB by default).
DATA_DIR ?= data
WORKSPACE_DIR ?= workspace

run: $(STAMP)
	$(PY) -m dashboard.demo $(DATA_DIR)
	@echo "calibration-lens: http://$(HOST):$(PORT) (datasets on the server: $(DATA_DIR)/)"
	CALCORE_DATA_DIR=$(DATA_DIR) CALCORE_WORKSPACE_DIR=$(WORKSPACE_DIR) $(PY) -m streamlit run dashboard/app.py --server.headless true \
	  --server.address $(HOST) --server.port $(PORT) \
	  --browser.gatherUsageStats false --server.fileWatcherType none

# The WHOLE suite, e2e and Spark included. pytest's exit code is make's exit code (5 =
# nothing collected is a failure too). CALCORE_REQUIRE_SPARK=1: tests/spark fail, never
# skip, when pyspark or Java is missing here (they skip only outside make test).
test: $(STAMP) chromium java
	CALCORE_REQUIRE_SPARK=1 $(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	@shopt -s nullglob; files=(benchmarks/bench_*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "bench: no benchmarks/bench_*.py yet"; exit 0; fi; \
	for f in "$${files[@]}"; do echo "== $$f"; $(PY) "$$f"; done

# Every paper replication and estimator study in full size; each writes its Markdown table
# and (from stdout) its JSON under docs/replications/. About 10 minutes on 2 cores.
replicate: $(STAMP)
	@for f in benchmarks/study_estimators.py benchmarks/replicate_*.py; do \
	  name=$$(basename "$$f" .py); name=$${name#replicate_}; \
	  [ "$$name" = study_estimators ] && name=estimator_study; \
	  echo "== $$f -> docs/replications/$$name.{md,json}"; \
	  $(PY) "$$f" > "docs/replications/$$name.json"; \
	done

lint: $(STAMP)
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts build *.egg-info
