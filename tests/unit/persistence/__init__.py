"""Unit tests of checkpoints and follow-up queues."""
