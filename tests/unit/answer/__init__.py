"""Unit tests of the answer: synthesis, grounding checks, answers built from observations."""
