// The tests' main (every suite but the GPU ones, which have their own): Catch2's
// session, whose exit code CTest reads as failed, skipped (77) or passed (skip.hpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "skip.hpp"

int main(int argc, char** argv) { return actorflow::test::RunTests(argc, argv); }
