#!/usr/bin/env python3
"""Reads a TensorBoard log directory with TensorBoard's own loader (EventAccumulator, which checks
both CRCs of every record) and prints its scalars, one "tag step value" line each. Exits 1 when
the directory holds no scalars, so it can check the event files xgrad writes.

    python3 tools/check_tensorboard.py LOG_DIR      (needs tensorboard: pip install tensorboard)
"""
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    # size_guidance 0 keeps every event instead of a reservoir sample, so all steps are printed.
    acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    if not tags:
        sys.exit(f"{sys.argv[1]}: no scalars found")
    for tag in sorted(tags):
        for event in acc.Scalars(tag):
            print(f"{tag} {event.step} {event.value:.9g} (wall time {event.wall_time:.3f})")
    print(f"{len(tags)} tags, {sum(len(acc.Scalars(t)) for t in tags)} scalars", file=sys.stderr)


if __name__ == "__main__":
    main()
