# Larmor: `make run` and `make test` do all set-up on a fresh Debian 12 machine (install what is
# missing, configure, build) and then open the workstation demo or run the whole suite.
PRESET ?= default
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
# CUDA_ARCHS=90 builds the CUDA plugin for one architecture only (CI does, to save time).
CUDA_ARCHS ?=
CMAKE_EXTRA := $(if $(CUDA_ARCHS),-DLARMOR_CUDA_ARCHS="$(CUDA_ARCHS)",)
CLI    := $(BUILD)/bin/larmor-cli
OUT    ?= out
RESULTS ?= device-results

.PHONY: all deps configure build test test-only run demo device bench fuzz package clean help asan-test

all: build

help:
	@echo "make run      install deps, build, reconstruct the bundled phantom (writes $(OUT)/)"
	@echo "make test     install deps, build, run every test this machine can run (fails on a skip not in tests/allowed-skips.txt)"
	@echo "make test-only CTEST_ARGS='-L e2e'   the same ctest run and skip gate on the existing build, restricted"
	@echo "make package  install deps, build, write the .deb (larmor_<version>_<arch>.deb) into $(BUILD)/"
	@echo "make device RESULTS=DIR   on the GPU machine: device preset, gpu tests, sanitizers, benchmarks"
	@echo "make asan-test  the unit and e2e tests under AddressSanitizer + UBSan (build/asan; not in CI: docs/testing.md)"
	@echo "PRESET=default|cpu|asan   CUDA_ARCHS=90   JOBS=N"

deps:
	@bash installer/install-deps.sh

configure: deps
	@mkdir -p build
	@cmake --preset $(PRESET) $(CMAKE_EXTRA) > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }
	@grep -E "^-- Larmor" $(BUILD).configure.log || true

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# `make test`: build, then test-only. test-only runs ctest on the existing build (CTEST_ARGS restricts it, e.g.
# CTEST_ARGS="-L e2e" or "-R 'e2e\.bart_'"), then tests/skip_gate.py: it prints every skip with its reason and
# fails the run on any failure and on any skip that tests/allowed-skips.txt does not accept here (docs/testing.md,
# "Skips"). Its last lines: `tests: N passed, N failed, N skipped ...` and `N passed, N failed` alone.
CTEST_ARGS ?=
test: build
	@$(MAKE) --no-print-directory test-only

test-only:
	@rm -f $(BUILD)/ctest-junit.xml $(BUILD)/ctest-tests.json
	@{ ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --timeout 900 \
	    --output-junit $(CURDIR)/$(BUILD)/ctest-junit.xml $(CTEST_ARGS); echo $$? > $(BUILD)/ctest.rc; } 2>&1 \
	  | tee $(BUILD)/ctest.log
	@ctest --test-dir $(BUILD) --show-only=json-v1 > $(BUILD)/ctest-tests.json
	@rc=0; python3 tests/skip_gate.py $(BUILD)/ctest-junit.xml $(BUILD)/ctest-tests.json tests/allowed-skips.txt \
	  $$(cat $(BUILD)/ctest.rc) --log $(BUILD)/ctest.log > $(BUILD)/skip-gate.txt 2>&1 || rc=$$?; \
	  cat $(BUILD)/skip-gate.txt | tee -a $(BUILD)/ctest.log; exit $$rc

# The unit and e2e tests under AddressSanitizer + UBSan (the asan preset: CPU, Debug). Not part of `make test`
# or CI: measured in docs/testing.md ("Sanitizers"), it does not fit CI's 60 minutes beside the suite.
# LSan ignores libhdf5's own leaks on error paths (tests/fuzz/lsan.supp); UBSan one GCC header artefact
# (tests/fuzz/ubsan.supp).
asan-test: deps
	@mkdir -p build
	@cmake --preset asan > build/asan.configure.log 2>&1 || { cat build/asan.configure.log; exit 1; }
	cmake --build build/asan -j$(JOBS) --target larmor-cli larmor-h5check larmor_unit_tests
	LSAN_OPTIONS="suppressions=$(CURDIR)/tests/fuzz/lsan.supp" ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
	  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/tests/fuzz/ubsan.supp" \
	  ctest --test-dir build/asan -L "unit|e2e" --output-on-failure -j$(JOBS) --timeout 3600

# The workstation on the bundled phantom (generated on the spot: nothing large in the repo). Without a
# display it says so and writes the same reconstruction headless into ./out (PNG + DICOM).
run: build
	@if [ -x $(BUILD)/bin/larmor ]; then $(BUILD)/bin/larmor --run; else $(MAKE) --no-print-directory demo; fi

# The command-line demo: simulate, reconstruct, write PNG/BART/JSON into ./out.

demo:
	@mkdir -p $(OUT)
	$(CLI) devices
	$(CLI) simulate --phantom shepp-logan --matrix 256 --coils 8 --traj cartesian --output $(OUT)/phantom.h5
	$(CLI) recon $(OUT)/phantom.h5 --method fft --device auto --output $(OUT)/phantom-fft.png --json $(OUT)/phantom-fft.json
	$(CLI) recon $(OUT)/phantom.h5 --method fft --device auto --output $(OUT)/phantom-fft.cfl
	@echo "Images: $(OUT)/phantom-fft.png (PNG), $(OUT)/phantom-fft.cfl (BART), timings: $(OUT)/phantom-fft.json"

# On the lent GPU machine (no Qt, VTK, DCMTK, ISMRMRD there): the device preset, gpu tests,
# compute-sanitizer, Google Benchmark and larmor-cli bench; results into $(RESULTS)/.
device:
	bash tests/gpu/run-on-device.sh $(RESULTS)

# The corpus evaluation (docs/evaluation.md, tests/evaluate/): every case against its truth and BART, about 25
# minutes on two cores; tables, JSON and figure into build/evaluate/ (ctest label slow, never part of `make test`).
.PHONY: evaluate
evaluate: build
	ctest --test-dir $(BUILD) -C Evaluate -L slow -V --timeout 3600

# The seed workloads with their limits (docs/benchmarks.md, "What runs in larmor-cli bench"): table on stdout,
# JSON and chart in $(OUT)/.
bench: build
	@mkdir -p $(OUT)
	$(CLI) bench --suite seeds --device auto --json $(OUT)/bench.json --chart $(OUT)/bench.png

# libFuzzer targets for every loader (clang; not part of CI): FUZZ_SECONDS each, default 600.
FUZZ_SECONDS ?= 600
fuzz:
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The Debian package (CPack; docs/packaging.md): installs with `sudo apt install ./larmor_*.deb`.
package: build
	cd $(BUILD) && cpack -G DEB
	@ls -t $(CURDIR)/$(BUILD)/larmor_*.deb | head -n 1 | sed "s|^|package: |"

clean:
	rm -rf build $(OUT)
