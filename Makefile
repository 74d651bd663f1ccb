# tesscpp: thin entry points over scripts/ and CMake presets (CMakePresets.json).
# The two commands a fresh machine needs are `make demo` and `make test`.

SHELL := /bin/bash
BOOTSTRAP := scripts/bootstrap.sh
PYTHON := .venv/bin/python
FUZZ_SECONDS ?= 300

.PHONY: all bootstrap build demo test check check-format check-layers check-namespaces check-python check-functions check-citations check-doc-refs bench wheel fuzz asan tsan format lint clean

all: build

bootstrap:
	@$(BOOTSTRAP)

# Optimised build (RelWithDebInfo) in build/release; build/bin/tesscpp and
# build/examples/lib<name>.so point into it.
build: bootstrap
	cmake --preset release >/dev/null
	cmake --build --preset release
	@mkdir -p build/bin build/examples
	@ln -sfn ../release/bin/tesscpp build/bin/tesscpp
	@for f in build/release/examples/*.so; do ln -sfn ../release/examples/$$(basename $$f) build/examples/; done

# Builds, then runs the demo (scripts/demo.sh).
demo: build
	scripts/demo.sh build/release

# Every test: the static checks, unit, golden and conformance suites (-Werror build), then each
# fuzz target for a few seconds under ASan+UBSan; then the ten slowest tests, pass or fail.
test: bootstrap check
	@status=0; cmake --workflow --preset ci || status=$$?; \
	  if [ $$status -eq 0 ]; then cmake --workflow --preset fuzz || status=$$?; fi; \
	  $(PYTHON) scripts/slowest_tests.py build/ci build/fuzz; exit $$status

# Benchmarks next to the Python stack; the table lands in bench/results/.
bench: build
	scripts/bench.sh build/release

# A wheel of the Python package (scikit-build-core builds the C++ core into it).
wheel: bootstrap
	$(PYTHON) -m pip wheel --no-deps -w build/wheel ./python

# Longer fuzzing: every target for FUZZ_SECONDS (default 300), the Python host's too (its
# extension module from the ci build).
fuzz: bootstrap
	cmake --preset fuzz -DTESS_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	cmake --build --preset fuzz
	ctest --preset fuzz
	cmake --preset ci >/dev/null
	cmake --build --preset ci --target _tesscpp
	mkdir -p build/ci/fuzz-corpus/python_host
	PYTHONPATH=build/ci/python $(PYTHON) tests/fuzz/fuzz_python_host.py -max_total_time=$(FUZZ_SECONDS) \
	  -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build/ci/fuzz-corpus/python_host/ \
	  build/ci/fuzz-corpus/python_host tests/fuzz/corpus/python_host

# Unit and conformance suites under sanitizers.
asan: bootstrap
	cmake --workflow --preset asan
tsan: bootstrap
	cmake --workflow --preset tsan

SOURCES = $(shell git ls-files '*.h' '*.cc' ':!third_party')

format:
	clang-format-14 -i $(SOURCES)

# Part of `make test`: the rules a reviewer would otherwise have to enforce.
check: check-format check-layers check-namespaces check-python check-functions check-citations check-doc-refs

# Every C++ file as clang-format leaves it (fix with `make format`).
check-format: bootstrap
	@clang-format-14 --dry-run -Werror $(SOURCES) && echo "check-format: $(words $(SOURCES)) files clean"

# No library links or includes a layer above its own (scripts/check_layers.py has the order).
check-layers: bootstrap
	@$(PYTHON) scripts/check_layers.py

# Namespaces follow the layers (docs/architecture.md §1; scripts/check_namespaces.py).
check-namespaces: bootstrap
	@$(PYTHON) scripts/check_namespaces.py

# ruff and mypy on the Python package and its tests.
check-python: bootstrap
	@scripts/check_python.sh

# Every bench/results/ file README.md and docs/ cite exists and says where it came from; no
# failed GPU run is cited as passing (scripts/check_citations.py).
check-citations: bootstrap
	@$(PYTHON) scripts/check_citations.py

# Every docs/<name>.md a comment, test or document cites exists, with the section it names
# (scripts/check_doc_refs.py): renaming, splitting or renumbering a document leaves none dangling.
check-doc-refs: bootstrap
	@$(PYTHON) scripts/check_doc_refs.py

# No C++ or Python function outside bench/ and examples/ over 80 lines (lizard's count, signature to
# closing brace): a longer one is split into named steps. Tests are held to it too.
check-functions: bootstrap
	@out=$$(.venv/bin/lizard -l cpp -l python -L 80 -C 100000 -a 100 -w src tools python include tests scripts 2>&1); \
	  if [ -n "$$out" ]; then echo "$$out"; echo "check-functions: functions over 80 lines (split them)"; exit 1; fi; \
	  echo "check-functions: no C++ or Python function over 80 lines (outside bench/ and examples/)"

# clang-tidy on every first-party file, through the tidy preset's clang build.
lint: bootstrap
	cmake --preset tidy >/dev/null
	cmake --build --preset tidy

clean:
	rm -rf build
