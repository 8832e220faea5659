# Thin wrapper over CMake: the two commands of the README's quick start.
BUILD ?= build
JOBS ?= 2

.PHONY: example test build deps

deps:
	./setup.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

example: build
	./$(BUILD)/examples/input_pipeline --dir $(BUILD)/input_pipeline_data

test: build
	cd $(BUILD) && ctest --output-on-failure
