// How a finished node's outputs reach its consumers, frames and iterations
// included (TensorFlow's executor propagation, section 4.4 of the whitepaper,
// after the MIT tagged-token machine): every tensor carries its frame and
// iteration as the IterationState it lands in.
//
//  - a normal node's consumers are in its own iteration; a node with a dead
//    input is dead (but ControlTrigger), and Merge fires on its first live
//    input (dead only when every data input is);
//  - Enter hands its value to iteration 0 of the child frame (started on its
//    first Enter), or, constant, to every iteration the frame ever has;
//  - NextIteration hands it to the next iteration, which starts unless
//    parallel_iterations are already running (then the value waits);
//  - Exit hands it to the parent frame's iteration; a dead Exit is passed on
//    (dead) only if the frame ends dead.
//
// Iterations are freed in order as they finish; a frame ends when its last
// iteration does and nothing more can enter. A frame's ring of iterations
// grows with the iterations live at once (up to parallel_iterations). Owned
// by the device actor's thread, like the StepState it works on.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "actorflow/actors/device/step_state.hpp"

namespace actorflow {

/// Routes node `node`'s outputs (of iteration `iter`; all dead when
/// `is_dead`) to its consumers, appends those that became ready to `ready`
/// (counting them in the step's and their iteration's outstanding nodes), and
/// retires `node` from `iter`, which may end iterations and frames. Outputs
/// may be moved from.
void PropagateOutputs(StepState* step, IterationState* iter, int32_t node, Tensor* outputs, bool is_dead,
                      std::vector<TaggedNode>* ready);

/// Slots a new loop frame's ring of iterations starts with (at most
/// parallel_iterations + 1).
constexpr size_t kInitialIterationRing = 16;

/// The (empty) slot of iteration `next`, the newest, of `frame` (whose
/// num_outstanding_iterations does not count it yet). The frame's ring of
/// iterations grows, doubling up to parallel_iterations + 1 slots, only when
/// the live iterations and `next` would not fit with one slot to spare, so a
/// frame's memory follows the iterations that actually run at once, not the
/// parallel_iterations it allows.
std::unique_ptr<IterationState>& NewIterationSlot(FrameState* frame, int64_t next);

}  // namespace actorflow
