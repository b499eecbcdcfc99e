"""What is said to a model and read back: the actions, the action schema, the provider message rules, JSON parsing, structured calls and the prompt templates."""

# What `reactgraph.protocol` held before it became a package; keep importing it
# from here for a while, or from its new home.
from reactgraph.protocol.messages import (  # noqa: F401
    UNFINISHED_TOOL_RESULT,
    answer_unfinished_tool_calls,
    check_protocol,
    in_mode_form,
)
