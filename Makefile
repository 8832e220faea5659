# Thin wrapper over CMake: the two commands of the README's quick start.
BUILD ?= build
JOBS ?= 2

.PHONY: example test build deps sanitize sanitize-build fuzz fuzz-build

deps:
	./setup.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

example: build
	./$(BUILD)/examples/input_pipeline --dir $(BUILD)/input_pipeline_data

test: build
	cd $(BUILD) && ctest --output-on-failure

# --- Hardening: sanitizers and fuzzing ----------------------------------------
# One extra build dir serves both: the tests, examples and fuzz targets built
# with AddressSanitizer + UndefinedBehaviorSanitizer (clang when present, and
# then with libFuzzer's coverage too; gcc otherwise, without fuzz targets).
ASAN_BUILD ?= build-asan
SANITIZERS ?= address,undefined
# -O1: ASan's advice (clear stacks, fast enough), and the cold build takes half the time of -O3.
SAN_OPT ?= -O1
CLANGXX := $(shell command -v clang++ 2>/dev/null)
ifneq ($(CLANGXX),)
  SAN_ENV := CC=clang CXX=clang++
  SAN_FUZZ := ON
else
  SAN_ENV :=
  SAN_FUZZ := OFF
endif
# Leaks are reported (CAF and protobuf free what they allocate at exit);
# halt_on_error stops a test at its first report; an allocation too large for
# ASan returns null (bad_alloc, as without ASan: the tests of allocation
# failure need it), where libFuzzer's -malloc_limit_mb still reports one over
# the limit. Suppressions and ignorelists only for third-party code, each entry
# saying why: tests/sanitizer/lsan.supp, tests/sanitizer/ubsan_ignorelist.txt
# (compile time: a fatal UBSan report ignores run-time suppressions).
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=1:allocator_may_return_null=1
export LSAN_OPTIONS ?= print_suppressions=0:suppressions=$(CURDIR)/tests/sanitizer/lsan.supp
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1:print_summary=1

sanitize-build: deps
	$(SAN_ENV) cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="$(SAN_OPT) -DNDEBUG" \
	  -DAF_SANITIZE=$(SANITIZERS) \
	  -DAF_FUZZ=$(SAN_FUZZ) -DAF_BUILD_BENCH=OFF -DAF_ENABLE_CUDA=OFF -DAF_BUILD_PYTHON=OFF
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# The tests under ASan+UBSan: any report fails the test that caused it. A test
# that failed only because LeakSanitizer's own tracer crashed at its exit, after
# all its checks passed, runs once more (tests/sanitizer/ctest_lsan_retry.sh says why).
# JOBS tests at once (those marked RUN_SERIAL alone): most wait on processes and
# sockets, and their timeouts scale with AF_TEST_SLOWDOWN; one at a time took
# 12.6 min of the CI stage's 40 here, two at a time 5.7 min.
sanitize: sanitize-build
	cd $(ASAN_BUILD) && $(CURDIR)/tests/sanitizer/ctest_lsan_retry.sh --output-on-failure -j$(JOBS)

# libFuzzer targets (tests/fuzz/), each run for FUZZ_SECONDS from a scratch copy
# of its seed corpus (new inputs it finds stay in $(ASAN_BUILD)/fuzz/corpus/);
# a crash, a sanitizer report, an input slower than FUZZ_TIMEOUT s or one
# taking more than FUZZ_RSS_MB is a finding: the input is kept in
# $(ASAN_BUILD)/fuzz/findings/ and make fails.
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_RSS_MB ?= 2048
FUZZ_MAX_LEN ?= 65536
FUZZ_TARGETS ?= fuzz_graphdef fuzz_records fuzz_json_tensor fuzz_checkpoint fuzz_tf_checkpoint fuzz_frames
FUZZ_FLAGS ?=

fuzz-build: deps
	@test -n "$(CLANGXX)" || { echo "make fuzz needs clang++ (libFuzzer): apt-get install clang" >&2; exit 2; }
	$(MAKE) --no-print-directory sanitize-build

fuzz: fuzz-build
	@mkdir -p $(ASAN_BUILD)/fuzz/findings
	@status=0; for t in $(FUZZ_TARGETS); do \
	  corpus=$(ASAN_BUILD)/fuzz/corpus/$$t; mkdir -p $$corpus; \
	  cp -n tests/fuzz/corpus/$$t/* $$corpus/ 2>/dev/null || true; \
	  echo "== $$t: $(FUZZ_SECONDS) s"; \
	  $(ASAN_BUILD)/tests/fuzz/$$t $$corpus -dict=tests/fuzz/$$t.dict \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=$(FUZZ_RSS_MB) \
	    -max_len=$(FUZZ_MAX_LEN) -print_final_stats=1 -artifact_prefix=$(ASAN_BUILD)/fuzz/findings/$$t- \
	    $(FUZZ_FLAGS) > $(ASAN_BUILD)/fuzz/$$t.log 2>&1 \
	    || { status=1; echo "!! $$t: finding (log $(ASAN_BUILD)/fuzz/$$t.log)"; grep -E "ERROR|SUMMARY|#[0-9]+ 0x" $(ASAN_BUILD)/fuzz/$$t.log | head -25; }; \
	  grep -E "stat::number_of_executed_units|Done [0-9]+ runs" $(ASAN_BUILD)/fuzz/$$t.log | tail -2; \
	done; exit $$status
