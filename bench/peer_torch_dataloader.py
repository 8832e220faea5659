"""Peer of bench_queue: PyTorch's DataLoader shuffling 64-float32 records.

Two figures, records/s: the DataLoader fetching record by record (the default
Dataset __getitem__ path, batch_size=64, shuffle=True), and fetching whole
batches (a BatchSampler over a shuffling sampler, the dataset indexed with the
batch's indices at once). Prints one JSON line per figure (bench_util format).
"""
import json
import statistics
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

RECORDS = 65536
FLOATS = 64
BATCH = 64


class BatchedDataset(TensorDataset):
    def __getitem__(self, indices):
        return self.tensors[0][indices]


def measure(loader, rounds=5):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = 0
        for batch in loader:
            n += batch[0].shape[0] if isinstance(batch, (list, tuple)) else batch.shape[0]
        times.append(n / (time.perf_counter() - t0))
    times.sort()
    return times


def report(impl, rates):
    print(json.dumps({"bench": "queue_records",
                      "params": {"record_floats": FLOATS, "dequeue_many": BATCH, "impl": impl},
                      "metric": "throughput", "unit": "records/s", "median": statistics.median(rates),
                      "min": rates[0], "max": rates[-1], "reps": len(rates)}), flush=True)


def main():
    torch.manual_seed(1)
    data = torch.arange(RECORDS * FLOATS, dtype=torch.float32).reshape(RECORDS, FLOATS)
    per_record = DataLoader(TensorDataset(data), batch_size=BATCH, shuffle=True)
    report("PyTorch DataLoader per record", measure(per_record))
    batched = DataLoader(BatchedDataset(data), batch_size=None,
                         sampler=BatchSampler(RandomSampler(data), batch_size=BATCH, drop_last=False))
    report("PyTorch DataLoader batched fetch", measure(batched))


if __name__ == "__main__":
    main()
