#!/usr/bin/env bash
# `make test`'s skip gate (tests/skip_gate.py) on real ctest runs of a small project made here (this ctest's JUnit
# and json-v1 output, the properties of tests/CMakeLists.txt): a script that prints "SKIP: x" and exits 1 is a
# failure; exit 77 is a skip, accepted only by an entry of the allowed list whose condition holds (label:gpu on a
# machine without a GPU, a name as root), else the run fails and names the skip and its reason; GoogleTest's own
# report of a skipped test is a skip with the GTEST_SKIP message, while output that only looks like it (a "SKIP:"
# line, a skip summary beside a failure) is a failure; a non-zero ctest status fails a run with no failed test;
# the closing lines; a malformed list or an unreadable JUnit file is exit 2; the real tests/allowed-skips.txt parses.
#   skip_gate_test.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gate="python3 $here/skip_gate.py"
dir=${1:-$(mktemp -d)}
rm -rf "$dir"; mkdir -p "$dir/src"; cd "$dir"
fails=0
expect() {  # status, description, command...
  local want=$1 what=$2; shift 2
  set +e; "$@" >out.txt 2>&1; local got=$?; set -e
  if [[ $got -ne $want ]]; then echo "FAIL: $what: exit $got, expected $want"; cat out.txt; fails=1; else echo "ok: $what"; fi
}
has() {  # text, description
  grep -qF -- "$1" out.txt || { echo "FAIL: $2: no '$1' in:"; cat out.txt; fails=1; }
}

# The project: each test is a shell line; the properties are those tests/CMakeLists.txt gives.
gtest_skip() {  # NAME: a shell line printing what GoogleTest prints for a skipped NAME
  printf '%s' "printf '%s\\n' '[ RUN      ] $1' 't.cpp:170: Skipped' 'root writes' '' '[  SKIPPED ] $1 (0 ms)'"
  printf '%s' " '[  PASSED  ] 0 tests.' '[  SKIPPED ] 1 test, listed below:' '[  SKIPPED ] $1'"
}
cat > src/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(gate NONE)
enable_testing()
set(GTEST_SKIP "\\\\[  SKIPPED \\\\]")  # what gtest_discover_tests gives every test
function(t name labels skip line)
  add_test(NAME \${name} COMMAND sh -c "\${line}")
  set_tests_properties(\${name} PROPERTIES LABELS "\${labels}")
  if(skip STREQUAL "code")
    set_tests_properties(\${name} PROPERTIES SKIP_RETURN_CODE 77)
  else()
    set_tests_properties(\${name} PROPERTIES SKIP_REGULAR_EXPRESSION "\${GTEST_SKIP}")
  endif()
endfunction()
t(e2e.pass e2e code "echo fine")
t(e2e.skip_then_fail e2e code "echo 'SKIP: x'; exit 1")
t(e2e.no_tool e2e code "echo 'SKIP: no frobnicator here'; exit 77")
t(gpu.no_device gpu code "echo 'SKIP: no CUDA device'; exit 77")
t([=[OnDevice/Fft.Round/cuda  # GetParam() = "cuda"]=] gpu regex [=[$(gtest_skip OnDevice/Fft.Round/cuda)]=])
t(OutputSafety.MissingOrReadOnlyParent unit regex [=[$(gtest_skip OutputSafety.MissingOrReadOnlyParent)]=])
t(Fake.SkipLineOnly unit regex "echo 'SKIP: x'; echo '[  SKIPPED ] 1 test, listed below:'; exit 1")
t(Fake.TearDownFailed unit regex [=[$(gtest_skip Fake.TearDownFailed); echo '[  FAILED  ] Fake: SetUpTestSuite or TearDownTestSuite'; exit 1]=])
CMAKE
cmake -S src -B build > cmake.log 2>&1 || { cat cmake.log; exit 1; }
run_ctest() {  # name regex -> build/NAME.xml, build/tests.json, the status in build/NAME.rc
  set +e; ctest --test-dir build -R "$2" --output-junit "$dir/build/$1.xml" > "build/$1.log" 2>&1; echo $? > "build/$1.rc"; set -e
  ctest --test-dir build --show-only=json-v1 > build/tests.json
}
cat > allowed.txt <<'LIST'
# selector condition reason
label:gpu                              no-gpu  no GPU here
OutputSafety.MissingOrReadOnlyParent   root    root writes into read-only folders
LIST
gate_on() {  # name [gate options...]
  local name=$1; shift
  $gate "build/$name.xml" build/tests.json allowed.txt "$(cat "build/$name.rc")" "$@"
}

run_ctest ok '^(e2e\.pass|gpu\.no_device|OutputSafety\..*|OnDevice/.*)$'
expect 0 "a pass, gpu skips without a GPU (one a parameterised GoogleTest's), the permission test's GoogleTest skip as root" gate_on ok --gpu no --root yes
has "skipped (allowed): gpu.no_device: no CUDA device [label:gpu, no-gpu]" "a skip is named with its reason"
has "skipped (allowed): OutputSafety.MissingOrReadOnlyParent: root writes [" "GoogleTest's skip message is the reason"
has "skipped (allowed): OnDevice/Fft.Round/cuda  # GetParam() = \"cuda\": root writes [" "a parameterised test's skip (ctest's name carries the parameter comment)"
has "tests: 1 passed, 0 failed, 3 skipped (allowed by allowed.txt); ctest exit status 0" "the summary line"
[[ $(tail -n 1 out.txt) == "1 passed, 0 failed" ]] || { echo "FAIL: the last line is not 'N passed, N failed'"; fails=1; }
expect 1 "the gpu skip where a GPU exists" gate_on ok --gpu yes --root yes
has "SKIPPED, NOT ALLOWED: gpu.no_device: no CUDA device" "the refused skip is named"
has "1 passed, 2 failed" "a refused skip counts as failed"
expect 1 "the permission test's skip as a user" gate_on ok --gpu no --root no
has "SKIPPED, NOT ALLOWED: OutputSafety.MissingOrReadOnlyParent: root writes" "the refused GoogleTest skip is named"

run_ctest sf '^e2e\.skip_then_fail$'
expect 1 "'SKIP: x' then exit 1" gate_on sf --gpu no --root yes
has "FAILED: e2e.skip_then_fail" "the failure is named"
has "0 passed, 1 failed" "it counts as failed"

run_ctest nt '^e2e\.no_tool$'
expect 1 "exit 77 of a test not in the list" gate_on nt --gpu no --root yes
has "SKIPPED, NOT ALLOWED: e2e.no_tool: no frobnicator here" "the skip and its reason are printed"

run_ctest fake '^Fake\.'
expect 1 "output that only looks like GoogleTest's skip" gate_on fake --gpu no --root yes
has "FAILED: Fake.SkipLineOnly: its output matched the skip pattern" "a SKIP line beside the pattern"
has "FAILED: Fake.TearDownFailed: its output matched the skip pattern" "a skip beside a failed suite tear-down"

run_ctest ok '^e2e\.pass$'
echo 8 > build/ok.rc
expect 1 "ctest's non-zero status with every test passed" gate_on ok --gpu no --root yes

echo "label:gpu sometimes why" > bad.txt
expect 2 "a malformed list" $gate build/ok.xml build/tests.json bad.txt 0
expect 2 "an unreadable JUnit file" $gate build/none.xml build/tests.json allowed.txt 0
expect 0 "the real list parses" $gate build/ok.xml build/tests.json "$here/allowed-skips.txt" 0 --gpu no --root yes
exit $fails
