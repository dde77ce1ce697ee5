# Set-up is part of every target: a fresh machine needs only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_TRACE := traces/lstm-lm-128w.zt

.PHONY: demo test install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first: 2.13.0 is the CPU build that lies on disk (no multi-GB CUDA download); pyproject
	# accepts a range, so the next line keeps it. The tests need every extra (Dask, scikit-learn).
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,dask,digits]'
	touch $(STAMP)

# A real trace (LSTM LM on the KJV, 128 workers): its statistics, then the whole design space
# timed on 16 machines x 8 GPUs with 25 Gbps NICs (the scenario file says exactly what; its CSV
# and plot land in out/).
demo: $(STAMP)
	$(VENV)/bin/zensim trace stats $(DEMO_TRACE)
	$(VENV)/bin/zensim run scenarios/lstm-16x8.yaml

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
