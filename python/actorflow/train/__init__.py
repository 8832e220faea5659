"""tf.train: optimizers, the global step, and (coming) savers, queue runners, coordinators and sessions."""

from actorflow.train.optimizer import *  # noqa: F401,F403
from actorflow.train.optimizer import __all__ as _opt_all

__all__ = list(_opt_all)
