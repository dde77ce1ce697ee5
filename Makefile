# Set-up is part of every target: a fresh machine needs only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_TRACE := traces/lstm-lm-128w.zt

.PHONY: demo test docs install system-packages clean

# Debian packages some tests and workloads use: the KJV text of the LSTM language-model workload,
# iproute2 (ip, tc) for emulation. Installed when root with apt (CI); otherwise a note says what is
# missing (those tests then fail with a one-line message naming the package).
SYSTEM_PACKAGES := bible-kjv bible-kjv-text iproute2
system-packages:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "system packages: all present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "system packages: installing $$missing"; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	else echo "system packages missing (install as root: apt-get install $$missing)"; fi

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first: 2.13.0 is the CPU build that lies on disk (no multi-GB CUDA download); pyproject
	# accepts a range, so the next line keeps it. The tests need every extra (Dask, scikit-learn, pyarrow, SimPy).
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,dask,digits,parquet,simpy]'
	# the chakra extra without mlc-chakra's declared dependencies (~100 packages for Chakra's own
	# converters): --chakra needs only its schema and encoder, and protobuf
	$(PY) -m pip install --quiet 'protobuf>=6.31.1'
	$(PY) -m pip install --quiet --no-deps 'mlc-chakra>=1.0'
	# numba's loops compiled now, once (about a minute of CPU), not in the first simulation
	$(VENV)/bin/zensim warmup
	touch $(STAMP)

# A real trace (LSTM LM on the KJV, 128 workers): its statistics, then the whole design space
# timed on 16 machines x 8 GPUs with 25 Gbps NICs (the scenario file says exactly what; its CSV
# and plot land in out/).
demo: $(STAMP)
	$(VENV)/bin/zensim trace stats $(DEMO_TRACE)
	$(VENV)/bin/zensim run scenarios/lstm-16x8.yaml

test: $(STAMP)
	$(PY) -m pytest -q

# The pages' script-made tables rebuilt in place (benchmarks/doc_tables.py: about a minute of CPU;
# tests/test_doc_tables.py fails while a page differs). docs/results.md's Fig. 8 tables and
# docs/claims.md take longer: benchmarks/fig8.py and benchmarks/claims.py. Tables of measured or
# long runs are rendered from the run's committed JSON/CSV (the command that rewrites it is beside
# the table); tables typed from runs whose output is not kept say so: `<!-- typed table: ... -->`.
docs: $(STAMP)
	$(PY) benchmarks/doc_tables.py --write

clean:
	rm -rf $(VENV) build *.egg-info
