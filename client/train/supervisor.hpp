// TrainingSupervisor: a training session that survives failures
// (TensorFlow's MonitoredTrainingSession, with its known bugs removed; see
// docs/distributed-design.md section 6.2).
//
// Start(): the chief restores the latest checkpoint of its directory, or
// runs the initializer when there is none; any other worker waits until the
// model is ready (every global variable initialized: each ready check is a
// true bool, or an empty list of names of uninitialized variables as
// TensorFlow's report_uninitialized_variables gives), polling every
// `ready_poll` (not TensorFlow's fixed 30 s), up to `ready_timeout`. Both then
// run the local initializer and the `after_init` ops.
//
// Run(): one training step. When it fails with Unavailable or Aborted (a
// task died, hung or restarted), the session is closed and created anew,
// after `backoff`, and prepared as in Start (a ps task that restarted lost
// its variables: the chief restores them from the latest checkpoint, and
// training resumes from that checkpoint's global step, never from zero);
// then the step is run again. At most `max_recoveries` times in the
// supervisor's life: then the error is returned, naming the recoveries.
// Each recovery is announced first (on_recovery), with the error.
// The chief saves every `save_every_steps` steps or `save_every_secs`.
//
// Finish(): the end of training, a state of its own: the chief saves, and
// nothing is retried after it.
//
//   TrainingSupervisor::Graph g = TrainingSupervisor::Prepare(root, saver_options);  // before ToGraphDef
//   TrainingSupervisor sup(graph_def, g, options);
//   AF_RETURN_IF_ERROR(sup.Start());
//   while (sup.global_step() < steps) AF_RETURN_IF_ERROR(sup.Run(feeds, {}, {train.name()}, &out));
//   AF_RETURN_IF_ERROR(sup.Finish());
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/saver.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

struct SupervisorOptions {
  bool is_chief = true;
  SessionOptions session;        // where the session runs (a Server's target, "actorflow://...")
  RunOptions run;                // every step's options (its deadline)
  int max_recoveries = 5;
  std::chrono::milliseconds backoff{500};
  std::chrono::milliseconds ready_poll{250};
  std::chrono::milliseconds ready_timeout{120000};
  std::vector<std::string> after_init;  // ops every worker runs once ready (local step inits, tokens: chief only)
  std::vector<std::string> chief_after_init;
  /// Called when a session is ready (after Start and every recovery), and
  /// when the current one has been closed and is about to be destroyed: for
  /// threads that run steps in it (the chief's QueueRunner of the sync op),
  /// or steps every replica runs first (all-reduce's broadcast of the chief's
  /// variables). The global step is read after it. A recoverable error from
  /// it is recovered from as from a failed step.
  std::function<Status(Session*)> on_session_ready;
  /// The chief's start in each new session, in place of restoring the
  /// Saver's latest checkpoint or running the init op: a front-end's own
  /// saver and initialization (python/: tf.train.Scaffold's saver, init op
  /// and init_fn). The local init and after_init ops follow it.
  std::function<Status(Session*)> chief_prepare;
  /// false: the global step is read when a session is made ready and after
  /// a resync, not after every step (a front-end whose hooks fetch it with
  /// the step); global_step() is then the one read last.
  bool read_global_step_each_step = true;
  /// Emptied as each session is closed: a front-end's own
  /// containers for the state of its sessions in this process (python/).
  std::vector<std::string> reset_containers;
  /// Called before each pause (a worker's poll for the model, a backoff
  /// before a recovery): an error from it ends the wait with it (a
  /// front-end's interrupt, Ctrl-C in Python).
  std::function<Status()> keep_waiting;
  std::function<void()> on_session_closed;
  /// Called with the error before each recovery (a step that failed, a
  /// session that could not be made ready) and the recovery's number: for a
  /// log line saying why training paused.
  std::function<void(const Status&, int recovery)> on_recovery;
  /// Elastic training (an all-reduce group of group_size 0): a step that
  /// failed recoverably (a member died or left: UNAVAILABLE; the group changed
  /// and must sync: ABORTED) is run again in the same session once this
  /// succeeds, with no new session and no checkpoint restored; it runs the
  /// state sync every survivor runs (BroadcastVariables of the group, from
  /// the first member that synced last: comm/collective_executor.hpp), `why`
  /// being the step's error. After
  /// `max_resyncs_per_failure` resyncs in a row without a step that went
  /// through, or a resync that fails with an error other than UNAVAILABLE or
  /// ABORTED, the supervisor recovers as without it (new session, checkpoint). Resyncs do not count against
  /// max_recoveries (resyncs() counts them).
  std::function<Status(Session*, const Status& why)> elastic_resync;
  int max_resyncs_per_failure = 5;
  /// Elastic: the global step training ends at (0: none). A resync that
  /// brings the global step to it or past (the others finished the last
  /// step while this worker's failed) makes Run return OutOfRange instead of
  /// running the step again, which no other worker would meet.
  int64_t last_step = 0;
  /// Before a step is run again after a resync or a recovery: makes its
  /// feeds anew (given the step's first feeds) from the state as it is now,
  /// e.g. the examples of a data position synced from another member and of
  /// this member's new rank (client/train/elastic_sampler.hpp). UNAVAILABLE
  /// or ABORTED counts as the step's failure (a resync or a recovery, and
  /// feeds made again); another error ends the step with it.
  std::function<Status(Session*, std::vector<std::pair<std::string, Tensor>>* feeds)> feeds_again;
};

class TrainingSupervisor {
 public:
  /// What the supervisor needs in the graph, added by Prepare.
  struct Graph {
    std::string init_op, local_init_op;
    std::vector<std::string> ready_checks;  // a bool per global variable, or names of those uninitialized
    std::string global_step;                // its value's tensor name ("": none, never read)
    std::string train;                      // the train op's name, when Prepare was given it
    std::string step_after_train;           // the global step read after it, fetched with it
    std::shared_ptr<Saver> saver;           // null without a checkpoint directory
  };
  /// Adds the init ops, the readiness checks and (with_checkpoints) a Saver
  /// to `scope`'s graph, which must hold its variables and global step already.
  /// Given the train op, a step that runs it fetches the global step as it is
  /// after it in the same Run; other steps read it with a Run of their own.
  static Graph Prepare(const Scope& scope, const SaverOptions& saver, bool with_checkpoints,
                       const Operation& train = Operation());

  TrainingSupervisor(proto::GraphDef graph, Graph g, SupervisorOptions options);
  ~TrainingSupervisor();

  Status Start();
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
    return Run(options_.run, feeds, fetches, targets, outputs);
  }
  /// The same with the step's own options (its deadline) in place of options.run.
  Status Run(const RunOptions& step_options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);
  Status Finish();
  /// Recovers as from a failed step (a new session made ready, within
  /// max_recoveries) after `why`, an UNAVAILABLE or ABORTED error of a run
  /// the caller made in session() itself (a front-end's hooks around a step);
  /// another error is returned as it is.
  Status Recover(const Status& why);

  /// The global step after the last step (read then).
  int64_t global_step() const { return global_step_; }
  int recoveries() const { return recoveries_; }
  /// Elastic resyncs that let training go on in the same session.
  int resyncs() const { return resyncs_; }
  Session* session() { return session_.get(); }

 private:
  Status NewSession();  // a fresh session, made ready
  Status WaitReady();
  Status ReadGlobalStep();
  Status StepValue(const Tensor& t);  // global_step_ from an int32 or int64 scalar
  Status Pause(std::chrono::milliseconds d);  // keep_waiting, then sleeps
  Status CloseSession();  // empties reset_containers, closes the session
  static bool Recoverable(const Status& s);

  proto::GraphDef graph_;
  Graph g_;
  SupervisorOptions options_;
  std::unique_ptr<Session> session_;
  int64_t global_step_ = 0;
  int recoveries_ = 0;
  int resyncs_ = 0;
  int resyncs_since_step_ = 0;  // consecutive, without a step that went through
  bool finished_ = false;
};

}  // namespace actorflow
