#!/bin/sh
# Installs what dtsim needs to build and test, and nothing that is already there.
# As root it runs `apt-get update` once and installs only the missing Debian packages; as any
# other user it prints the one apt-get line to run.
# DTSIM_FUZZ_DEPS=1 also asks for clang and libFuzzer's runtime (libclang-rt-14-dev), which only
# the fuzz harnesses need (bench/fuzz/run.sh); `make test` never does.
set -eu

missing=""
need_pkg() { # $1 = Debian package, $2 = test command that succeeds when it is present
  if ! sh -c "$2" >/dev/null 2>&1; then missing="$missing $1"; fi
}
need_pkg cmake            'command -v cmake'
need_pkg pkg-config       'command -v pkg-config'
need_pkg gcc              'command -v gcc'
need_pkg make             'command -v make'
need_pkg libglib2.0-dev   'pkg-config --exists glib-2.0 gio-2.0'
need_pkg libjson-glib-dev 'pkg-config --exists json-glib-1.0'
need_pkg libhwloc-dev     'pkg-config --exists hwloc'
need_pkg libcmocka-dev    'pkg-config --exists cmocka'
# Chakra execution traces: the protobuf-c runtime and the compiler of the schema.
need_pkg libprotobuf-c-dev   'pkg-config --exists libprotobuf-c'
need_pkg protobuf-c-compiler 'command -v protoc-c'
# The check of written Chakra traces against the schema (tests/cli/chakra_tests.sh) loads them
# with Python's protobuf through protoc; the test is skipped without them.
need_pkg protobuf-compiler   'command -v protoc'
need_pkg python3-protobuf    'python3 -c "import google.protobuf"'
need_pkg libopenmpi-dev   'pkg-config --exists ompi-c || test -x /usr/bin/mpicc'
need_pkg openmpi-bin      'command -v mpirun'
need_pkg valgrind         'command -v valgrind'
# The MPI tests (tests/mpi/run.sh) check the Chrome traces they write with python3's json.
need_pkg python3          'command -v python3'
# ip netns and tc, for the one-machine cluster of scripts/netns-cluster.sh.
need_pkg iproute2         'command -v ip && command -v tc'
# The locale sources (/usr/share/i18n/locales) from which tests/cli/reliability_tests.sh
# compiles a decimal-comma locale into a scratch folder with localedef.
need_pkg locales          'test -f /usr/share/i18n/locales/de_DE'
if [ "${DTSIM_FUZZ_DEPS:-0}" = 1 ]; then
  need_pkg clang              'command -v clang'
  need_pkg libclang-rt-14-dev 'ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a'
fi

if [ -z "$missing" ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "install-deps: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing ca-certificates >/dev/null
  # openmpi-bin pulls in a launcher (ssh client) only as a recommendation; mpirun needs one on
  # PATH even for single-host runs.
  command -v ssh >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends openssh-client >/dev/null
else
  echo "install-deps: missing packages:$missing" >&2
  echo "run:  sudo apt-get install -y$missing" >&2
  exit 1
fi
