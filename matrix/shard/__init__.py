"""Shard planning: split the cells a runner must run into CI jobs that finish together."""
