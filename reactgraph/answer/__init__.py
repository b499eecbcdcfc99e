"""The answer: synthesis prompts and streaming, grounding checks, answers built from observations."""
