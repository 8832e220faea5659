"""tf.train: optimizers and the global step, queue runners and coordinators, input producers and batching,
savers, and training sessions."""

from actorflow.train.optimizer import *  # noqa: F401,F403
from actorflow.train.coordinator import Coordinator, LooperThread  # noqa: F401
from actorflow.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners  # noqa: F401
from actorflow.train.input import *  # noqa: F401,F403
from actorflow.train import queue_runner  # noqa: F401
from actorflow.train.saver import (CheckpointState, Saver, checkpoint_exists, get_checkpoint_state,  # noqa: F401
                                   latest_checkpoint, update_checkpoint_state)
from actorflow.summary import summary_iterator  # noqa: F401 (tf.train.summary_iterator)
from actorflow.train.server_lib import ClusterSpec, Server, SyncReplicasOptimizer, replica_device_setter  # noqa
from actorflow.train.monitored_session import *  # noqa: F401,F403
from actorflow.train.all_reduce import *  # noqa: F401,F403 (actorflow's: all-reduce data parallelism)
from actorflow.learning_rate_decay import *  # noqa: F401,F403
