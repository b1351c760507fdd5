# Front door. `make` builds Release into build/; `make demo` installs what is missing, builds
# and runs the default scenario; `make test` builds with ASan+UBSan in build-asan/ and runs
# every test, then runs the unit tests once more under valgrind from a plain Debug build
# (build-valgrind/, ctest label "valgrind"). `make` and `make build` also install the commit-msg
# hook of scripts/hooks/ into .git/hooks when the checkout has none there; `make bench` runs
# every benchmark with small sizes (bench/run-all.sh).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build hooks demo test valgrind deps bench clean
all: build

deps:
	@sh scripts/install-deps.sh

build/CMakeCache.txt:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: build/CMakeCache.txt hooks
	cmake --build build -j $(JOBS)

hooks:
	@sh scripts/install-hooks.sh

demo: deps
	@$(MAKE) --no-print-directory build
	@sh scripts/demo.sh

build-asan/CMakeCache.txt:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDTSIM_ENABLE_ASAN=ON -DDTSIM_EVENT_POOL=OFF $(CMAKE_FLAGS)

build-valgrind/CMakeCache.txt:
	cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=Debug -DDTSIM_EVENT_POOL=OFF -DDTSIM_BUILD_BENCH=OFF $(CMAKE_FLAGS)

test: deps build-asan/CMakeCache.txt
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -LE valgrind
	@$(MAKE) --no-print-directory valgrind

valgrind: deps build-valgrind/CMakeCache.txt
	cmake --build build-valgrind -j $(JOBS)
	cd build-valgrind && ctest --output-on-failure -j $(JOBS) -L valgrind

bench: build
	@sh bench/run-all.sh

clean:
	rm -rf build build-asan build-valgrind
