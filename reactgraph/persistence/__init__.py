"""Checkpoints: opening savers, write batching, the Postgres saver, the durability protocol, follow-up queues."""
