# The two commands of README.md. Each installs missing Debian packages, configures with
# CMake presets, builds and runs.
.PHONY: demo demo-build test deps build asan tsan format clean

STRATA := build/default/tools/strata/strata

deps:
	@tools/install-deps.sh test

# The library, `strata` and the apps only (preset `demo`: no tests, no benchmarks), with
# only their packages: no test tools or benchmark peers.
demo-build:
	@tools/install-deps.sh demo
	cmake --preset demo
	cmake --build --preset demo

build: deps
	cmake --preset default
	cmake --build --preset default

# The main job: what Strata sees of this machine, a tour of its places, then one SAXPY
# kernel on every CPU backend and split over two emulated sim devices.
demo: demo-build
	$(STRATA) info
	STRATA_SIM_DEVICES=2:bw=12GB/s,lat=8us,speed=0.5 build/default/apps/machine_tour/machine_tour
	build/default/apps/saxpy/saxpy --strata-sim-devices=2:bw=12GB/s,lat=8us

# Every test: the default build (tests, CLI, packaging, CUDA compile check, formatting),
# then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# execution tests of the serial and threads backends under ThreadSanitizer.
test: build
	ctest --preset default
	$(MAKE) --no-print-directory asan tsan

asan: deps
	cmake --preset asan
	cmake --build --preset asan
	ctest --preset asan

tsan: deps
	cmake --preset tsan
	cmake --build --preset tsan
	ctest --preset tsan

format:
	cmake -DCLANG_FORMAT=clang-format -DSOURCE_DIR=$(CURDIR) -DFIX=ON -P cmake/check_format.cmake

clean:
	rm -rf build
